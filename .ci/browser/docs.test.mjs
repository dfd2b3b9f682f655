// The API reference page and CORS in Debian's Chromium (make test-browser).
//
//   node docs.test.mjs PORT OUTDIR      (CHROMIUM: the browser's path)
//
// A server listens on 127.0.0.1:PORT with CORS_ALLOWED_ORIGINS=http://localhost:PORT.
// The page is opened as http://localhost:PORT/docs; it must say it is loading
// until the renderer has run, render the contract with each operation's success
// as its first reply sample and request fields in the document's order, find an
// operation with its search box and open it, and reach no other host:
// every request elsewhere must have been refused by the page's own
// Content-Security-Policy (the test also refuses them, so the network is never
// used either way). A screenshot of the opened operation goes to OUTDIR.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [port, outDir] = process.argv.slice(2);
const page = `http://localhost:${port}`;
const other = `http://127.0.0.1:${port}`;
const local = new Set([`localhost:${port}`, `127.0.0.1:${port}`]);
const problems = [];
const fail = (msg) => problems.push(msg);

const profile = mkdtempSync(join(tmpdir(), 'crm-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
try {
  // Nothing leaves the machine, whatever the page tries.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    return local.has(url.host) ? route.continue() : route.abort('blockedbyclient');
  });
  const tab = await context.newPage();
  const external = [];
  tab.on('request', (r) => {
    const url = new URL(r.url());
    if ((url.protocol === 'http:' || url.protocol === 'https:') && !local.has(url.host)) external.push(r);
  });
  tab.on('pageerror', (e) => fail(`page error: ${e.message}`));
  tab.on('console', (m) => {
    // The renderer's attribution shows a logo from its CDN; the page's policy
    // refuses it, and says so on the console.
    if (m.type() === 'error' && !m.text().includes('violates the following Content Security Policy directive')) {
      fail(`console error: ${m.text()}`);
    }
  });

  // While the renderer loads (held back here for 1.5 s, as a slow machine or link would),
  // the page says so; it has not been rendered yet.
  await tab.route('**/docs/redoc.standalone.js', async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await route.continue();
  });
  const reply = await tab.goto(`${page}/docs`, { waitUntil: 'commit' });
  if (reply.status() !== 200) fail(`GET /docs answered ${reply.status()}`);
  const loading = tab.locator('#loading');
  await loading.waitFor({ state: 'visible', timeout: 10000 });
  const early = await tab.evaluate(() => ({ text: document.getElementById('loading')?.innerText ?? '', redoc: typeof window.Redoc }));
  if (!early.text.startsWith('Loading the API reference') || early.redoc !== 'undefined') {
    fail(`while the renderer loads the page shows ${JSON.stringify(early)}`);
  }

  // The page renders the contract, and no longer says it is loading.
  const search = tab.locator('input[placeholder="Search..."]');
  await search.waitFor({ timeout: 30000 });
  await tab.getByText('Conventions shared by every operation').first().waitFor();
  await loading.waitFor({ state: 'detached', timeout: 10000 }).catch(() => fail('the page still says it is loading after rendering'));

  // Every operation's first reply sample is its success: the first status tab of its
  // response samples is 200 and selected, and the example shown is a success envelope.
  // (/openapi.json keeps the document's order; sorted keys put a failure first for most.)
  const contract = await (await fetch(`${other}/openapi.json`)).json();
  const operationIds = new Set();
  for (const item of Object.values(contract.paths)) {
    for (const op of Object.values(item)) if (op && op.operationId) operationIds.add(op.operationId);
  }
  const samples = await tab.evaluate(() => [...document.querySelectorAll('h3')]
    .filter((h) => h.textContent.trim() === 'Response samples')
    .map((h) => {
      const tabs = [...h.nextElementSibling.querySelectorAll('[role="tab"]')];
      const panel = h.nextElementSibling.querySelector('[role="tabpanel"].react-tabs__tab-panel--selected');
      const text = panel ? panel.innerText : '';
      const at = text.indexOf('Copy\n');
      return {
        op: (h.closest('[data-section-id]')?.getAttribute('data-section-id') ?? '').replace(/^.*operation\//, ''),
        first: tabs[0]?.textContent.trim(),
        selected: tabs.find((t) => t.getAttribute('aria-selected') === 'true')?.textContent.trim(),
        sample: at < 0 ? '' : text.slice(at + 5, at + 200),
      };
    }));
  const shown = new Set(samples.map((s) => s.op));
  for (const id of operationIds) if (!shown.has(id)) fail(`${id}: no response samples on the page`);
  // Request fields in the document's order: the counterparty insert's required three first.
  const bodyFields = await tab.evaluate(() => {
    const section = document.querySelector('[data-section-id$="operation/companyInsert"]');
    const heading = [...(section?.querySelectorAll('h5') ?? [])].find((h) => h.textContent.startsWith('Request Body schema'));
    const names = [];
    for (let el = heading?.nextElementSibling; el && names.length < 3; el = el.nextElementSibling) {
      names.push(...[...el.querySelectorAll('.property-name')].map((e) => e.textContent.trim()));
    }
    return names.slice(0, 3).join(',');
  });
  if (bodyFields !== 'name,type_id,user_id') fail(`companyInsert's request fields begin ${bodyFields}, not name,type_id,user_id`);
  const wrong = samples.filter((s) => s.first !== '200' || s.selected !== '200' || !/^\{\s*"status":\s*"success"/.test(s.sample));
  for (const s of wrong) fail(`${s.op}: the first reply sample is ${s.selected} (first tab ${s.first}): ${JSON.stringify(s.sample.slice(0, 80))}`);

  // Search finds the card of a counterparty; opening it shows the operation.
  await search.fill('card');
  const hit = tab.locator('[data-role="search:results"] [data-item-id="tag/companies/operation/companyGet"]');
  await hit.waitFor({ timeout: 10000 });
  await hit.click();
  await tab.waitForFunction(() => location.hash === '#tag/companies/operation/companyGet');
  const heading = tab.locator('h2', { hasText: 'The card of one counterparty' });
  await heading.waitFor({ state: 'visible' });
  await tab.waitForTimeout(300); // the scroll settles
  const shot = join(outDir, 'docs-operation.png');
  await tab.screenshot({ path: shot });
  const box = await heading.boundingBox();
  if (!box || box.y < 0 || box.y > 900) fail(`the opened operation is not in view (heading at ${JSON.stringify(box)})`);

  for (const r of external) {
    const why = r.failure()?.errorText ?? 'not refused';
    if (why !== 'csp') fail(`the page asked ${r.url()} and its policy did not refuse it (${why})`);
  }

  // CORS, from pages without the reference page's policy (which lets it
  // reach only its own origin): from the allowed origin a call with a token
  // goes through a preflight and its reply is readable, X-Request-Id included.
  const allowing = await context.newPage();
  await allowing.goto(`${page}/openapi.json`);
  const allowed = await allowing.evaluate(async (url) => {
    const r = await fetch(url, { headers: { Authorization: 'Bearer crm_0_nothing', 'X-Request-Id': 'browser-test-1' } });
    return { status: r.status, id: r.headers.get('X-Request-Id'), body: await r.json() };
  }, `${other}/dashboard/my/day`);
  if (allowed.status !== 401 || allowed.id !== 'browser-test-1' || allowed.body.code !== '401') {
    fail(`a call from an allowed origin: ${JSON.stringify(allowed)}`);
  }
  // From an origin that is not allowed the browser refuses to send it.
  const refusing = await context.newPage();
  await refusing.goto(`${other}/openapi.json`);
  const refused = await refusing.evaluate(async (url) => {
    try {
      await fetch(url, { headers: { Authorization: 'Bearer crm_0_nothing' } });
      return 'answered';
    } catch (e) {
      return e.name;
    }
  }, `${page}/dashboard/my/day`);
  if (refused !== 'TypeError') fail(`a call from an origin that is not allowed was ${refused}, not refused`);

  if (problems.length === 0) {
    console.log(`test-browser: passed: /docs said it was loading, then rendered offline with a success as the first reply sample of each of ${operationIds.size} operations and request fields in the document's order; search found "The card of one counterparty" (screenshot ${shot}); CORS allowed and refused as configured`);
  }
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
if (problems.length > 0) {
  for (const p of problems) console.error(`test-browser: ${p}`);
  process.exit(1);
}
