// The API reference page and CORS in Debian's Chromium (make test-browser).
//
//   node docs.test.mjs PORT OUTDIR      (CHROMIUM: the browser's path)
//
// A server listens on 127.0.0.1:PORT with CORS_ALLOWED_ORIGINS=http://localhost:PORT.
// The page is opened as http://localhost:PORT/docs; it must render the contract,
// find an operation with its search box and open it, and reach no other host:
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

  // The page renders the contract.
  const reply = await tab.goto(`${page}/docs`);
  if (reply.status() !== 200) fail(`GET /docs answered ${reply.status()}`);
  const search = tab.locator('input[placeholder="Search..."]');
  await search.waitFor({ timeout: 30000 });
  await tab.getByText('Conventions shared by every operation').first().waitFor();

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
    console.log(`test-browser: passed: /docs rendered offline, search found "The card of one counterparty" (screenshot ${shot}); CORS allowed and refused as configured`);
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
