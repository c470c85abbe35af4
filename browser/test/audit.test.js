// Browser tests of the audit log page and the API (OpenAPI) page, against
// bin/scheduler with admin and guest logins: writes done through the API
// (one refused) show up on the audit page with who, what and the result,
// its filters work, a guest has no audit page; the API page lists every
// route of the served document and opens one to its parameters and
// responses; both pages in zh. Screenshots: browser/artifacts/audit-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

let s, br, page;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `audit-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const login = (user, pass) => logIn(page, user, pass);
const logout = () => logOut(page);
// rowsText: the audit table's rows as text, after the search finished
async function rowsText() {
  await page.waitForSelector('#audit-table table, #audit-error');
  return page.$$eval('#audit-table tbody tr', (trs) => trs.map((tr) => tr.innerText.replace(/\s+/g, ' ')));
}
// wait until the audit log shows n rows (rows reach the database within
// the trace writer's flush interval); polls the API with a deadline
async function waitAuditRows(n) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const p = await s.api('GET', '/audit?per_page=1');
    if (p.total >= n) return p.total;
    if (Date.now() > deadline) throw new Error(`audit log has ${p.total} rows, want ${n}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  s = await startScheduler();
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'warning' && m.text().includes('i18n')) problems.push(m.text()); });
  // writes through the API: carried out, and one refused (a guest)
  await s.api('POST', '/app', { appName: 'audit_app', appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register', { jobName: 'audit_job', appName: 'audit_app', cron: '0 0 0 1 1 ? 2099', jobParameter: 'secret-param-1', cpuCount: 0.1, memoryMB: 16 });
  await s.api('POST', '/job/audit_job/disable');
  const guest = 'Basic ' + Buffer.from(s.creds.guest.join(':')).toString('base64');
  const r = await fetch(s.base + '/api/job/audit_job/deregister', { method: 'DELETE', headers: { Authorization: guest } });
  assert.equal(r.status, 403);
  await waitAuditRows(4);
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('the audit page shows every write with who, what and the result', async () => {
  await page.goto(s.base + '/');
  await login(...s.creds.admin);
  assert.ok(await page.isVisible('[data-nav=audit]'), 'admin sees the audit page in the menu');
  await waitAuditRows(5); // the console's login too
  await nav('#/audit');
  let rows = await rowsText();
  // the admin's console login, the refused guest delete, the disable, the register, the publish
  assert.ok(rows.length >= 5, rows.join('\n'));
  const want = [
    /admin.*POST.*\/api\/login.*login succeeded as admin.*200/,
    /guest.*DELETE.*\/api\/job\/:jobName\/deregister.*audit_job.*refused: the guest role is read-only.*403/,
    /admin.*POST.*\/api\/job\/:jobName\/disable.*audit_job.*204/,
    /admin.*POST.*\/api\/job\/register.*audit_job.*jobParameter.*200/,
    /admin.*POST.*\/api\/app .*audit_app.*appURL=file:.*200/,
  ];
  for (const re of want) assert.ok(rows.some((x) => re.test(x)), `no row like ${re}:\n${rows.join('\n')}`);
  assert.ok(!rows.join('\n').includes('secret-param-1'), 'no parameter value in the audit log');
  await shot('log');
  // filters: user, status, method
  await page.fill('#af-user', 'guest');
  await page.click('#a-search');
  await page.waitForFunction(() => location.hash.includes('user=guest'));
  // the table is drawn again once the filtered page arrives (under load, after the hash changed)
  await page.waitForFunction(() => [...document.querySelectorAll('#audit-table tbody tr')].every((tr) => /guest/.test(tr.innerText)));
  rows = await rowsText();
  assert.equal(rows.length, 1, rows.join('\n'));
  await page.click('#a-reset');
  await page.waitForFunction(() => !location.hash.includes('user='));
  await page.fill('#af-status', '204');
  await page.selectOption('#af-method', 'POST');
  await page.click('#a-search');
  await page.waitForFunction(() => location.hash.includes('status=204'));
  await page.waitForFunction(() => [...document.querySelectorAll('#audit-table tbody tr')].every((tr) => /POST/.test(tr.innerText) && /204/.test(tr.innerText)));
  rows = await rowsText();
  assert.ok(rows.length >= 1 && rows.every((x) => /POST/.test(x) && /204/.test(x)), rows.join('\n'));
  await shot('filtered');
});

test('the API page lists every route of the document and opens one', async () => {
  await nav('#/api');
  const docOps = await page.evaluate(async () => {
    const d = await (await fetch('/api/openapi.json')).json();
    let n = 0;
    for (const item of Object.values(d.paths)) for (const m of ['get', 'post', 'put', 'delete', 'patch']) if (item[m]) n++;
    return n;
  });
  assert.ok(docOps >= 40, `the document has ${docOps} operations`);
  assert.equal(await page.locator('#api-ops details.op').count(), docOps);
  assert.ok(await page.isVisible('#api-ops details[data-path="/api/audit"][data-method=GET]'));
  // the filter narrows the list
  await page.fill('#api-filter', 'audit');
  await page.waitForFunction(() => document.querySelectorAll('#api-ops details.op').length === 1);
  await page.fill('#api-filter', '');
  await page.waitForFunction((n) => document.querySelectorAll('#api-ops details.op').length === n, docOps);
  // open POST /api/job/trigger: parameters, body and responses from the document
  const op = page.locator('#api-ops details[data-path="/api/job/trigger"][data-method=POST]');
  await op.locator('summary').click();
  await op.locator('.opbody').waitFor();
  const text = await op.innerText();
  assert.match(text, /text\/plain/);
  assert.match(text, /idempotencyKey/);
  for (const code of ['200', '204', '400', '401', '403', '404', '409', '413', '500']) {
    assert.ok(await op.locator(`tr[data-code="${code}"]`).count(), `response ${code} shown`);
  }
  // a schema link opens the schema below
  await op.locator('a.ref[data-schema=TriggerResult]').first().click();
  await page.waitForSelector('#schema-TriggerResult[open] .opbody');
  assert.match(await page.innerText('#schema-TriggerResult'), /duplicate/);
  await op.scrollIntoViewIfNeeded();
  await shot('api');
  await screenshot(op, { path: join(ARTIFACTS, 'audit-api-trigger.png') });
});

test('both pages in zh', async () => {
  await page.selectOption('#lang', 'zh');
  await page.waitForSelector('#page[data-ready]');
  await nav('#/audit');
  assert.match(await page.textContent('h1'), /审计日志/);
  assert.match(await page.textContent('#audit-table thead'), /用户.*方法.*结果/);
  await shot('log-zh');
  await nav('#/api');
  assert.match(await page.textContent('#api-ops'), /应用/);
  await shot('api-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForSelector('#page[data-ready]');
});

test('a guest has no audit page; the server refuses it too', async () => {
  await logout();
  await login(...s.creds.guest);
  assert.equal(await page.locator('[data-nav=audit]').count(), 0);
  assert.ok(await page.isVisible('[data-nav=api]'), 'the API page is for everyone');
  await nav('#/audit');
  await page.waitForSelector('#audit-error');
  assert.match(await page.textContent('#audit-error'), /only an admin/i);
  await shot('guest');
  assert.deepEqual(problems, []);
});
