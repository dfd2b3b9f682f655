// openapi-typescript's types (at its defaults) with openapi-fetch, as its
// documentation shows them.
import createClient from "openapi-fetch";
import type { components, paths } from "../out/openapi-typescript/api";
import { amount, checkCard, checkGoods, checkMissing, main, missingCompanyId, server, success, today } from "./common";

type Schemas = components["schemas"];

// Bodies without the fields the server defaults (person, is_hot, status_id, type) compile.
export const minimal: [Schemas["CompanyInsertRequest"], Schemas["TaskInsertRequest"], Schemas["FieldInsertRequest"]] = [
  { name: "Contoso", type_id: 11, user_id: 5 },
  { company_id: 1001, note: "Call back", type_id: 31 },
  { module: 1, name: "segment" },
];

const api = createClient<paths>({ baseUrl: server.url, headers: { Authorization: `Bearer ${server.token}` } });

async function first(code: 40 | 41): Promise<number> {
  const { data } = await api.GET("/directory/{code}", { params: { path: { code } } });
  const list = JSON.parse(success("directoryGet", data).value) as Schemas["DirectoryList"];
  return list[0].ID;
}

await main("openapi-typescript + openapi-fetch", async () => {
  const [typeId, stageId] = [await first(40), await first(41)];
  const card = await api.GET("/company/get", { params: { query: { id: server.companyId } } });
  checkCard(JSON.parse(success("companyGet", card.data).value) as Schemas["CompanyCard"]);

  const ins = await api.POST("/deal/insert", {
    body: {
      name: "lint-clients openapi-fetch", company_id: server.companyId, type_id: typeId, status_id: stageId,
      user_id: server.userId, date_start: today, date_finish: today, sum: amount,
      Goods: [{ discription: "exactness probe", price: amount, qnt: 1 }],
    },
  });
  const dealId = JSON.parse(success("dealInsert", ins.data).value) as Schemas["NewId"];
  const goods = await api.GET("/deal/goods/list", { params: { query: { deal_id: dealId } } });
  checkGoods(JSON.parse(success("dealGoodsList", goods.data).value) as Schemas["DealGoodsList"]);

  const missing = await api.GET("/company/get", { params: { query: { id: missingCompanyId } } });
  checkMissing(missing.data);
});
