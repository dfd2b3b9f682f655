// orval's client (at its defaults: axios functions), as its documentation
// shows it.
import axios from "axios";
import {
  companyGet, dealGoodsList, dealInsert, directoryGet,
  type CompanyCard, type CompanyInsertRequest, type DealGoodsList, type DirectoryList, type FieldInsertRequest, type NewId, type TaskInsertRequest,
} from "../out/orval/api";
import { amount, checkCard, checkGoods, checkMissing, main, missingCompanyId, server, success, today } from "./common";

// Bodies without the fields the server defaults (person, is_hot, status_id, type) compile.
export const minimal: [CompanyInsertRequest, TaskInsertRequest, FieldInsertRequest] = [
  { name: "Contoso", type_id: 11, user_id: 5 },
  { company_id: 1001, note: "Call back", type_id: 31 },
  { module: 1, name: "segment" },
];

axios.defaults.baseURL = server.url;
axios.defaults.headers.common.Authorization = `Bearer ${server.token}`;

async function first(code: 40 | 41): Promise<number> {
  const { data } = await directoryGet(code);
  const list = JSON.parse(success("directoryGet", data).value) as DirectoryList;
  return list[0].ID;
}

await main("orval", async () => {
  const [typeId, stageId] = [await first(40), await first(41)];
  const card = await companyGet({ id: server.companyId });
  checkCard(JSON.parse(success("companyGet", card.data).value) as CompanyCard);

  const ins = await dealInsert({
    name: "lint-clients orval", company_id: server.companyId, type_id: typeId, status_id: stageId,
    user_id: server.userId, date_start: today, date_finish: today, sum: amount,
    Goods: [{ discription: "exactness probe", price: amount, qnt: 1 }],
  });
  const dealId = JSON.parse(success("dealInsert", ins.data).value) as NewId;
  const goods = await dealGoodsList({ deal_id: dealId });
  checkGoods(JSON.parse(success("dealGoodsList", goods.data).value) as DealGoodsList);

  const missing = await companyGet({ id: missingCompanyId });
  checkMissing(missing.data);
});
