// Type checks: compiled with the tests (tsc --strict); each @ts-expect-error line must fail to
// type-check, or the compile fails with "Unused '@ts-expect-error' directive".

import type { CompanyCard, Decimal, ListRow, ListRowOf } from "../src/index.js";
import { createClient } from "../src/index.js";

export async function typeChecks(): Promise<void> {
  const c = createClient({ baseUrl: "http://localhost:8080", token: "t" });

  const card: CompanyCard = await c.companyGet({ id: 1 });
  const id: number = await c.companyInsert({ name: "n", type_id: 1, user_id: 1 });
  const nothing: void = await c.mailSend({ mail: { account_id: "1", to_address: "a@b.example", subject: "", body: "" } });
  void card, id, nothing;

  // The universal list: rows hold exactly the literal columns, typed by the module.
  const rows = await c.commonListPaging({ module: 20, columns: ["id", "sum", "ADD_region"] });
  const sum: Decimal | null = rows[0]!.sum;
  const add: string | number | boolean | null = rows[0]!.ADD_region;
  const row: ListRowOf<20, "id" | "sum" | "ADD_region"> | undefined = rows[0];
  void sum, add, row;
  // @ts-expect-error: name was not asked for
  void rows[0]!.name;
  // @ts-expect-error: goods (21) have no column "company_name"
  await c.commonListPaging({ module: 21, columns: ["id", "company_name"] });
  // @ts-expect-error: tasks have no additional fields
  await c.commonListPaging({ module: 2, columns: ["id", "ADD_region"] });

  // The card's counterparty and a row of ListRow: their declared members, and additional
  // fields by their ADD_ names; a misspelt member is an error.
  const name: string = card.company.name;
  const colour: unknown = card.company.ADD_colour;
  // @ts-expect-error: a misspelt member of the card's counterparty
  void card.company.nmae_zz;
  const anyRow: ListRow = { id: 1, ADD_colour: "red" };
  // @ts-expect-error: a misspelt member of a list row
  void anyRow.nmae;
  // @ts-expect-error: a list row with a misspelt member
  const badRow: ListRow = { id: 1, nmae: "x" };
  void name, colour, badRow;

  // @ts-expect-error: a misspelt field of the body
  await c.companyInsert({ name: "n", type_id: 1, user_id: 1, adress: "x" });
  // @ts-expect-error: a parameter of the wrong type
  await c.companyGet({ id: "1" });
  // @ts-expect-error: a required parameter missing
  await c.companyGet({});
  // @ts-expect-error: a card is not a number
  const wrong: number = await c.companyGet({ id: 1 });
  void wrong;
  // @ts-expect-error: the value of companyInsert is a number
  const s: string = await c.companyInsert({ name: "n", type_id: 1, user_id: 1 });
  void s;
}
