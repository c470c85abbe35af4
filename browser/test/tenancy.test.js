// Browser tests of namespaces in the console, against bin/scheduler with a
// users file (auth_users_file): alice edits pay; carol edits pay and views
// search; the admin sees every namespace. The namespace switcher lists
// only what the user may see, the pages show that namespace's jobs alone,
// a view role shows no write action, and the audit and cluster pages are
// in the menu only for who may read them. Screenshots:
// browser/artifacts/tenancy-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

// Hashes as `htpasswd -nbB NAME PASSWORD` writes them (apache2-utils).
const USERS = `users:
  - name: alice    # password: secret
    password: '$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG'
    namespaces: {pay: edit}
  - name: carol    # password: pw3
    password: '$2y$05$Ks66vx1SE9xDFh2s8iAUsueUgUY6zDsrfjv7MyrjqKDoHvItedjTS'
    namespaces: {pay: edit, search: view}
`;

let s, br, page, dir;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `tenancy-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const login = (user, pass) => logIn(page, user, pass);
const logout = () => logOut(page);
const options = () => page.$$eval('#namespace option', (os) => os.map((o) => o.value));
// the job names the jobs page lists, once it has drawn them
async function jobNames() {
  await page.waitForSelector('#page table tbody tr');
  return page.$$eval('#page table tbody tr td:first-child a', (as) => as.map((a) => a.textContent));
}
async function pick(ns) {
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.selectOption('#namespace', ns);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const writeButtons = () => page.locator('#register-job, [data-trigger]').count();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-tenancy-'));
  const users = join(dir, 'users.yaml');
  await writeFile(users, USERS, { mode: 0o600 });
  s = await startScheduler({ args: ['--auth-users-file', users], log: 'tenancy-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  const url = 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz');
  await s.api('PUT', '/namespaces/pay', { limit: { cpuCount: 2, memoryMB: 2048 } });
  await s.api('PUT', '/namespaces/search', {});
  for (const [ns, job] of [['default', 'def_job'], ['pay', 'nightly'], ['pay', 'pay_only'], ['search', 'nightly']]) {
    const q = ns === 'default' ? '' : '?namespace=' + ns;
    await s.api('POST', '/app' + q, { appName: 'etl', appURL: url, bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 }).catch(() => {});
    await s.api('POST', '/job/register' + q, { jobName: job, appName: 'etl', cron: '0 0 0 1 1 ? 2099', description: 'of ' + ns, cpuCount: 0.1, memoryMB: 16 });
  }
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('alice sees pay alone: its jobs, write actions, its audit, no cluster page', async () => {
  await page.goto(s.base + '/');
  await login('alice', 'secret');
  assert.deepEqual(await options(), ['pay']);
  await nav('#/jobs');
  assert.deepEqual((await jobNames()).sort(), ['nightly', 'pay_only']);
  assert.ok(await page.isVisible('#register-job'), 'an editor may register jobs');
  assert.ok(await page.isVisible('[data-nav=audit]'), 'an editor reads its audit');
  assert.ok(!(await page.isVisible('[data-nav=cluster]')), 'no role in default: no cluster page');
  await shot('alice-jobs');
  // a forced read of default is refused by the server
  const forced = await page.evaluate(async () => {
    const r = await fetch('/api/job/jobs', { credentials: 'omit', headers: { Authorization: 'Bearer ' + sessionStorage.getItem('ejc.token') } });
    return { status: r.status, body: await r.json() };
  });
  assert.equal(forced.status, 403);
  assert.match(forced.body.message, /no role in namespace 'default'/);
  await logout();
});

test('carol switches between pay (edit) and search (view, read only)', async () => {
  await login('carol', 'pw3');
  assert.deepEqual((await options()).sort(), ['pay', 'search']);
  await nav('#/jobs');
  await pick('search');
  assert.deepEqual(await jobNames(), ['nightly']);
  assert.ok(await page.isVisible('#view-banner'), 'the view role says it is read only');
  assert.equal(await writeButtons(), 0, 'no write action with the view role');
  await nav('#/jobs/nightly');
  assert.match(await page.innerText('#page'), /of search/);
  await shot('carol-search-view');
  await nav('#/jobs');
  await pick('pay');
  assert.deepEqual((await jobNames()).sort(), ['nightly', 'pay_only']);
  assert.ok(!(await page.isVisible('#view-banner')));
  assert.ok(await page.isVisible('#register-job'));
  await shot('carol-pay-edit');
  await logout();
});

test('the admin sees every namespace, default first', async () => {
  await login(...s.creds.admin);
  assert.deepEqual(await options(), ['default', 'pay', 'search']);
  await nav('#/jobs');
  await pick('default');
  assert.deepEqual(await jobNames(), ['def_job']);
  assert.ok(await page.isVisible('[data-nav=cluster]'));
  await shot('admin-default');
  await logout();
  assert.deepEqual(problems, []);
});
