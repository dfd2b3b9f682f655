// What the three TypeScript client checks share: the server and demo account
// they are given (.ci/lint-clients.sh sets the variables), the amount that must
// survive a write and a read, and the checks of the decoded payloads.

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name}`);
  return v;
}

export const server = {
  url: need("CRM_URL"),
  token: need("CRM_TOKEN"),
  userId: Number(need("CRM_USER_ID")),
  companyId: Number(need("CRM_COMPANY_ID")),
};

// 15 significant digits: a 32-bit float keeps 7 of them, a JS number all.
export const amount = 1234567890123.45;

// No counterparty of any account has this id.
export const missingCompanyId = 999999999999;

export const today = new Date().toISOString().slice(0, 10);

// The envelope as every generator types it.
export interface AnyEnvelope {
  status: string;
  error: string;
  code: string | null;
  value: string;
}

/** success returns the envelope of a successful reply and throws for any other. */
export function success<E extends AnyEnvelope>(op: string, env: E | undefined): E {
  if (!env || env.status !== "success") {
    throw new Error(`${op}: ${env ? `${env.status} ${env.code}: ${env.error}` : "no envelope"}`);
  }
  return env;
}

export function checkCard(card: { company: { id: number; name: string } }): void {
  if (card.company.id !== server.companyId || card.company.name === "") {
    throw new Error(`the card of ${server.companyId}: id ${card.company.id}, name ${JSON.stringify(card.company.name)}`);
  }
}

export function checkGoods(list: { price: number; sum: number }[]): void {
  if (list.length !== 1 || list[0].price !== amount || list[0].sum !== amount) {
    throw new Error(`the deal's goods read back: ${JSON.stringify(list)}; want one position of price and sum ${amount}`);
  }
}

/** checkMissing: the card of a missing counterparty is status Error (capital E), code 404, value "". */
export function checkMissing(env: AnyEnvelope | undefined): void {
  if (!env || env.status !== "Error" || env.code !== "404" || !env.error.includes("not found") || env.value !== "") {
    throw new Error(`the card of a missing counterparty: ${JSON.stringify(env)}`);
  }
}

export async function main(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
    console.log(`lint-clients: the ${name} client read, wrote ${amount.toFixed(2)} and read it back exactly, and saw the expected failure`);
  } catch (e) {
    console.error(`lint-clients: the ${name} client: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  }
}
