// The TypeScript SDK against a live server: `make test` runs this file through the Go test
// sdk/typescript_test.go, which starts crm-server's handler on a throwaway database with the
// demo account and passes its address and tokens in the environment.

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";

import { createClient, CrmError, type Client, type DirectoryEntry } from "../src/index.js";

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through \`go test ./sdk\` (make test)`);
  return v;
};

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

async function rejectsWith(p: Promise<unknown>, code: string, text = ""): Promise<CrmError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof CrmError, `${String(err)} is no CrmError`);
    assert.equal(err.code, code, err.message);
    assert.ok(err.message.includes(text), `${JSON.stringify(err.message)} does not contain ${JSON.stringify(text)}`);
    return err;
  }
  assert.fail(`resolved; want code ${code}`);
}

describe("the TypeScript SDK against a live server", () => {
  let c: Client;
  let member: Client;
  const adminId = Number(env("CRM_USER_ID"));
  const sample = {
    goods: Number(env("CRM_SAMPLE_GOODS_ID")),
    company: Number(env("CRM_SAMPLE_COMPANY_ID")),
    deal: Number(env("CRM_SAMPLE_DEAL_ID")),
    document: Number(env("CRM_SAMPLE_DOCUMENT_ID")),
  };
  let companyType = 0;
  let companyId = 0;
  let contactId = 0;
  let dealId = 0;
  const first = async (code: number): Promise<number> => {
    const vals: DirectoryEntry[] = await c.directoryGet({ code: code as 9 });
    assert.ok(vals.length > 0, `directory ${code} is empty`);
    return (vals[0] as DirectoryEntry).ID;
  };

  before(async () => {
    c = createClient({ baseUrl: env("CRM_URL"), token: env("CRM_TOKEN") });
    member = createClient({ baseUrl: env("CRM_URL"), token: env("CRM_MEMBER_TOKEN") });
    companyType = await first(9);
  });

  it("inserts a counterparty with contacts, e-mails, phones and requisites", async () => {
    const id = await c.companyInsert(
      {
        name: "TS Widgets",
        city: "Vilnius",
        type_id: companyType,
        user_id: adminId,
        Emails: [{ email: "office@ts-widgets.example" }],
        Phones: [{ phone: "+370 600 00001", descr: "reception" }],
        Contacts: [{ first_name: "Ona", last_name: "Vaitkute", Emails: [{ email: "ona@ts-widgets.example" }] }],
        Paymentdetails: { inn: "5000111222", bank_name: "TS Bank" },
      },
      { check_duplicates: true },
    );
    assert.equal(typeof id, "number");
    assert.ok(id > 0);
    companyId = id;
    assert.ok((await c.companyEmailInsert({ company_id: id, email: "sales@ts-widgets.example" })) > 0);
    assert.ok((await c.companyPhoneInsert({ company_id: id, phone: "+370 600 00002" })) > 0);
    assert.ok((await c.companyRequisitesInsert({ id_company: id, inn: "5000111333" })) > 0);
    const res = await c.contactInsert({ company_id: id, first_name: "Jonas", last_name: "Petraitis", Phones: [{ phone: "+370 600 00003" }] });
    assert.ok(res.NEW_ID > 0);
    assert.equal(res.TELEPHONES?.length, 1);
    assert.equal(res.EMAILS, null);
    contactId = res.NEW_ID;
  });

  it("rejects the duplicate e-mail with 409 and the existing id", async () => {
    const err = await rejectsWith(
      c.companyInsert({ name: "TS Copy", type_id: companyType, user_id: adminId, Emails: [{ email: "OFFICE@ts-widgets.example" }] }, { check_duplicates: true }),
      "409",
      "office@ts-widgets.example",
    );
    assert.equal(err.existingId, companyId);
    assert.equal(err.status, 200);
    assert.equal(err.envelopeStatus, "error");
  });

  it("reads the card, and a missing one as the card's Error", async () => {
    const card = await c.companyGet({ id: companyId });
    assert.equal(card.company.id, companyId);
    assert.equal(card.company.name, "TS Widgets");
    assert.equal(card.company.city, "Vilnius");
    assert.equal(card.company.type_id, companyType);
    assert.equal(card.emails.length, 3);
    assert.equal(card.phones.length, 3);
    assert.equal(card.contacts.length, 2);
    assert.equal(card.requisites.length, 2);
    assert.equal(card.requisites[0]?.inn, "5000111222");
    assert.equal(card.requisites[0]?.bank_name, "TS Bank");
    const err = await rejectsWith(c.companyGet({ id: 999999999 }), "404", "not found");
    assert.equal(err.envelopeStatus, "Error");
  });

  it("updates with null", async () => {
    const status = await first(10);
    assert.equal(await c.companyUpdate({ id: companyId, status_id: status, note: "second note" }), 1);
    let card = await c.companyGet({ id: companyId });
    assert.equal(card.company.status_id, status);
    assert.equal(card.company.note, "second note");
    assert.equal(await c.companyUpdate({ id: companyId, status_id: null }), 1);
    card = await c.companyGet({ id: companyId });
    assert.equal(card.company.status_id, null);
    const err = await rejectsWith(c.companyUpdate({ id: companyId, status_id: 999999999 }), "400", "status_id");
    assert.equal(err.value, "0");
  });

  it("lists with filters, paging and sort", async () => {
    const page = await c.withMeta.commonListPaging({ module: 1, columns: ["id", "name", "city"], name: "ts widgets", records_onpage: 1 });
    assert.deepEqual({ rows: page.rows, pages: page.pages, page: page.page }, { rows: 1, pages: 1, page: 1 });
    assert.deepEqual(page.value, [{ id: companyId, name: "TS Widgets", city: "Vilnius" }]);
    const sorted = await c.withMeta.commonListPaging({ module: 1, columns: ["id", "name"], records_onpage: 2, page: 2, sorting_column: "name", sorting_direction: 0 });
    assert.equal(sorted.page, 2);
    assert.ok(sorted.rows >= 3);
    assert.equal(sorted.pages, Math.ceil(sorted.rows / 2));
    assert.equal(sorted.value.length, 2);
    const [a, b] = sorted.value;
    assert.ok(a && b && (a.name ?? "") <= (b.name ?? ""), "ascending by name");
    const contacts = await c.contactList({ company_id: companyId });
    assert.equal(contacts.length, 2);
    await rejectsWith(c.commonListPaging({ module: 1, columns: "id,colour" }), "400", "colour");
  });

  it("inserts and lists tasks", async () => {
    const id = await c.taskInsert({ company_id: companyId, type_id: await first(35), note: "call Ona", contact_id: contactId });
    const tasks = await c.taskList({ company_id: companyId });
    assert.equal(tasks.length, 1);
    assert.equal(tasks[0]?.id, id);
    assert.equal(tasks[0]?.note, "call Ona");
  });

  it("keeps every digit of an amount, deals with goods, goods update", async () => {
    const today = new Date().toISOString().slice(0, 10);
    dealId = await c.dealInsert({
      company_id: companyId, name: "TS deal", type_id: await first(40), status_id: await first(41),
      user_id: adminId, date_start: today, date_finish: today, sum: "1234567890123456.78",
    });
    const rows = await c.commonListPaging({ module: 20, columns: ["id", "sum"], id: dealId });
    assert.deepEqual(rows, [{ id: dealId, sum: "1234567890123456.78" }]);
    assert.equal(await c.dealGoodsInsert({ deal_id: dealId, goods_ids: String(sample.goods) }), 1);
    const goods = await c.dealGoodsList({ deal_id: dealId });
    assert.equal(goods.length, 1);
    assert.equal(goods[0]?.goods_id, sample.goods);
    const pos = await c.dealGoodsUpdate({ deal_id: dealId, id: goods[0]?.id ?? 0, qnt: 2, price: "10.005" });
    assert.equal(pos.price, "10.01");
    assert.equal(pos.sum, "20.02");
    assert.equal(Number(pos.qnt), 2);
    assert.equal(await c.dealUpdate({ id: dealId, name: "TS deal 2" }), 1);
  });

  it("reads documents and money quick lists", async () => {
    const docs = await c.documentList({ company_id: sample.company });
    assert.ok(docs.some((d) => d.id === sample.document));
    assert.ok(docs.every((d) => typeof d.sum === "string"), "document sums are decimals");
    const money = await c.withMeta.financeList({ deal_id: sample.deal });
    assert.ok(money.value.length > 0);
    assert.equal(money.rows, money.value.length);
    assert.ok(money.value.every((m) => typeof m.sum === "string"));
    const positions = await c.documentGoodsList({ document_id: sample.document });
    assert.ok(positions.length > 0);
    await rejectsWith(c.documentList({}), "400", "company_id");
  });

  it("reads directories", async () => {
    const vals = await c.directoryGet({ code: 9 });
    assert.ok(vals.length > 0);
    assert.equal(typeof vals[0]?.NAME, "string");
  });

  it("sends mail, which resolves to nothing", async () => {
    const sent = await c.mailSend({
      mail: { account_id: env("CRM_MAIL_ACCOUNT_ID"), to_address: "ona@ts-widgets.example", subject: b64("Offer"), body: b64("<p>Hello</p>"), company_id: companyId, deal_id: dealId },
    });
    assert.equal(sent, undefined);
    const rows = await c.commonListPaging({ module: 24, columns: ["id", "subject", "to_address"], company_id: companyId });
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.subject, "Offer");
  });

  it("reads the four dashboards and the team KPI's 403", async () => {
    const day = await c.dashboardMyDay();
    assert.equal(day.user.id, adminId);
    assert.equal(typeof day.money.income, "string");
    const tasks = await c.dashboardMyTasks({});
    assert.match(tasks.date, /^\d{4}-\d{2}-\d{2}$/);
    const kpi = await c.dashboardKpiMy();
    assert.equal(typeof kpi.has_kpi, "boolean");
    const team = await c.dashboardKpiTeam();
    assert.match(team.period.date_from, /^\d{4}-\d{2}-\d{2}$/);
    const err = await rejectsWith(member.dashboardKpiTeam(), "403");
    assert.equal(err.status, 200);
  });

  it("rejects a bad token with 401", async () => {
    const bad = createClient({ baseUrl: env("CRM_URL"), token: "nonsense" });
    const err = await rejectsWith(bad.companyGet({ id: companyId }), "401");
    assert.equal(err.status, 401);
  });
});
