// This file must NOT compile (checked by sdk/typescript_test.go): a misspelt field and a
// parameter of the wrong type are type errors, not surprises at run time.

import { createClient } from "../../src/index.js";

const c = createClient({ baseUrl: "http://localhost:8080", token: "t" });

export const misspelt = c.companyInsert({ name: "n", type_id: 1, user_id: 1, adress: "1 Harbour Street" });

export const wrongType = c.companyGet({ id: "1001" });

export async function misspeltMember(): Promise<unknown> {
  const card = await c.companyGet({ id: 1001 });
  return card.company.nmae_zz;
}
