// The client's requests and failures with a fetch passed in (no server).

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { createClient, CrmError } from "../src/index.js";

type Seen = { url: string; init: RequestInit };

function fake(status: number, body: string, headers: Record<string, string> = {}) {
  const seen: Seen[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    seen.push({ url: String(input), init: init ?? {} });
    return new Response(body, { status, headers });
  };
  return { seen, fetch: fetch as typeof globalThis.fetch };
}

const ok = (value: string, rows = 0) => JSON.stringify({ status: "success", error: "", code: null, rows, pages: rows ? 1 : 0, page: rows ? 1 : 0, value });

describe("the client", () => {
  it("builds the request from the operation table", async () => {
    const f = fake(200, ok('[{"id":5,"ADD_x":7}]', 1));
    const c = createClient({ baseUrl: "http://crm.example/", token: "tok", fetch: f.fetch });
    const rows = await c.commonListPaging({ module: 20, columns: ["id", "ADD_x"], name: "a b" }, { headers: { "Idempotency-Key": "k1" } });
    assert.deepEqual(rows, [{ id: 5, ADD_x: 7 }]);
    const req = f.seen[0]!;
    assert.equal(req.url, "http://crm.example/common/list/paging/20?columns=id%2CADD_x&name=a+b");
    assert.equal(req.init.method, "POST");
    assert.equal(req.init.body, undefined);
    const h = req.init.headers as Record<string, string>;
    assert.equal(h["Authorization"], "Bearer tok");
    assert.equal(h["Idempotency-Key"], "k1");
  });

  it("sends a body with its decimals as JSON numbers", async () => {
    const f = fake(200, ok("1"));
    const c = createClient({ baseUrl: "http://crm.example", token: "tok", fetch: f.fetch });
    assert.equal(await c.dealUpdate({ id: 3, sum: "1234567890123456.78" }), 1);
    assert.equal(f.seen[0]!.init.body, '{"id":3,"sum":1234567890123456.78}');
  });

  it("rejects 429 with Retry-After", async () => {
    const f = fake(429, JSON.stringify({ status: "error", error: "rate limit exceeded: wait", code: "429", rows: 0, pages: 0, page: 0, value: "" }), { "Retry-After": "3", "X-Request-Id": "r1" });
    const c = createClient({ baseUrl: "http://crm.example", token: "tok", fetch: f.fetch });
    await assert.rejects(c.directoryGet({ code: 9 }), (e: unknown) => {
      assert.ok(e instanceof CrmError);
      assert.deepEqual([e.code, e.status, e.retryAfter, e.requestId, e.message], ["429", 429, 3, "r1", "rate limit exceeded: wait"]);
      return true;
    });
  });

  it("rejects a reply that is no envelope", async () => {
    const f = fake(502, "<html>bad gateway</html>");
    const c = createClient({ baseUrl: "http://crm.example", token: "tok", fetch: f.fetch });
    await assert.rejects(c.healthz(), (e: unknown) => {
      assert.ok(e instanceof CrmError);
      assert.equal(e.code, "502");
      assert.equal(e.message, "HTTP 502 without an envelope: <html>bad gateway</html>");
      return true;
    });
  });
});
