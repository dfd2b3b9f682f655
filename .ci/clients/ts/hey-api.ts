// @hey-api/openapi-ts's client (at its defaults: its types, its SDK and its
// fetch client), as its documentation shows it.
import { client } from "../out/hey-api/client.gen";
import { companyGet, dealGoodsList, dealInsert, directoryGet } from "../out/hey-api/sdk.gen";
import type { CompanyCard, CompanyInsertRequest, DealGoodsList, DirectoryList, FieldInsertRequest, NewId, TaskInsertRequest } from "../out/hey-api/types.gen";
import { amount, checkCard, checkGoods, checkMissing, main, missingCompanyId, server, success, today } from "./common";

// Bodies without the fields the server defaults (person, is_hot, status_id, type) compile.
export const minimal: [CompanyInsertRequest, TaskInsertRequest, FieldInsertRequest] = [
  { name: "Contoso", type_id: 11, user_id: 5 },
  { company_id: 1001, note: "Call back", type_id: 31 },
  { module: 1, name: "segment" },
];

client.setConfig({ baseUrl: server.url, auth: server.token });

async function first(code: 40 | 41): Promise<number> {
  const { data } = await directoryGet({ path: { code } });
  const list = JSON.parse(success("directoryGet", data).value) as DirectoryList;
  return list[0].ID;
}

await main("@hey-api/openapi-ts", async () => {
  const [typeId, stageId] = [await first(40), await first(41)];
  const card = await companyGet({ query: { id: server.companyId } });
  checkCard(JSON.parse(success("companyGet", card.data).value) as CompanyCard);

  const ins = await dealInsert({
    body: {
      name: "lint-clients hey-api", company_id: server.companyId, type_id: typeId, status_id: stageId,
      user_id: server.userId, date_start: today, date_finish: today, sum: amount,
      Goods: [{ discription: "exactness probe", price: amount, qnt: 1 }],
    },
  });
  const dealId = JSON.parse(success("dealInsert", ins.data).value) as NewId;
  const goods = await dealGoodsList({ query: { deal_id: dealId } });
  checkGoods(JSON.parse(success("dealGoodsList", goods.data).value) as DealGoodsList);

  const missing = await companyGet({ query: { id: missingCompanyId } });
  checkMissing(missing.data);
});
