// Browser test of a namespace's page (#/namespaces/{name}): against
// bin/scheduler with a users file, namespace pay with a guarantee and a
// limit runs a SCRIPT job on a 3-second cron; alice (edit in pay) opens
// the page from the link beside the namespace switcher and sees pay's
// usage now against its guarantee and limit, the chart of the leader's
// samples (in use, guarantee, limit) and the on-time rate of its fires,
// the same numbers GET /api/namespaces/pay/usage gives; in zh too. bob
// (search only) is refused pay's page by the server. Screenshots:
// browser/artifacts/nsusage-*.png.
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
  - name: bob      # password: hunter2
    password: '$2y$05$775ogPsIQk6GuRP9SjwQq.60fB2IJJUJ78HpzhbvfsKcfpqvjKNCm'
    namespaces: {search: edit}
`;

let s, br, page, dir;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `nsusage-${name}.png`), fullPage: true });
}
const login = (user, pass) => logIn(page, user, pass);
const logout = () => logOut(page);
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
// until pay's series holds a sample of its running job and a fire was admitted
async function usageWithRun() {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const u = await s.api('GET', '/namespaces/pay/usage');
    if (u.samples.some((x) => x.cpuCount > 0) && u.onTime.fires > 0) return u;
    if (Date.now() > deadline) throw new Error('pay never showed a sample of its running job: ' + JSON.stringify(u));
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-nsusage-'));
  const users = join(dir, 'users.yaml');
  await writeFile(users, USERS, { mode: 0o600 });
  s = await startScheduler({ args: ['--auth-users-file', users], log: 'nsusage-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('PUT', '/namespaces/pay', { guarantee: { cpuCount: 0.5, memoryMB: 256 }, limit: { cpuCount: 2, memoryMB: 2048 }, weight: 2 });
  await s.api('PUT', '/namespaces/search', {});
  const url = 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz');
  await s.api('POST', '/app?namespace=pay', { appName: 'etl', appURL: url, bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register?namespace=pay', { jobName: 'tick', appName: 'etl', jobType: 'SCRIPT', cron: '*/3 * * * * ?',
    cpuCount: 0.2, memoryMB: 16, props: { 'script.command.line': 'sleep 20; true' } });
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('alice opens pay\'s page: usage against guarantee and limit over time, fires on time', async () => {
  const u = await usageWithRun();
  await page.goto(s.base + '/');
  await login('alice', 'secret');
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.click('#ns-usage');
  await page.waitForSelector('#page[data-page=namespace][data-ready]:not([data-stale])');
  assert.match(await page.innerText('#page h1'), /Namespace pay/);
  assert.match(await page.innerText('#ns-cpu'), /\/ 0\.5 \/ 2$/m, 'CPU in use / guarantee / limit');
  assert.match(await page.innerText('#ns-mem'), /\/ 256 \/ 2048$/m);
  assert.match(await page.innerText('#ns-weight'), /2/);
  // three lines (in use, guarantee, limit) over the leader's samples
  assert.equal(await page.locator('#ns-chart-cpu svg polyline').count(), 3);
  assert.equal(await page.locator('#ns-chart-mem svg polyline').count(), 3);
  const pts = await page.$eval('#ns-chart-cpu svg polyline', (p) => p.getAttribute('points').split(' ').length);
  assert.ok(pts >= u.samples.length, `the in-use line has ${pts} points; the API had ${u.samples.length} samples`);
  assert.match(await page.innerText('#ns-chart-cpu'), /in use[\s\S]*guarantee[\s\S]*limit/);
  // the on-time rate, as the API counts it at this moment
  const now = await s.api('GET', '/namespaces/pay/usage');
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.click('#page h1 .btn:not(a)'); // refresh
  await page.waitForFunction(() => !/—/.test(document.getElementById('ns-ontime').innerText));
  const onTime = await page.innerText('#ns-ontime');
  const m = onTime.match(/([\d.]+) %[\s\S]*?(\d+) of (\d+) fires/);
  assert.ok(m, `on-time stat: ${onTime}`);
  assert.ok(+m[3] >= now.onTime.fires && +m[3] >= 1, `${m[3]} fires shown; the API had ${now.onTime.fires}`);
  assert.equal(+m[1], +((100 * +m[2]) / +m[3]).toFixed(1));
  assert.match(await page.innerText('#ns-since'), /Sampled by the leader every 10 s since/);
  assert.equal(await page.$eval('#namespace', (el) => el.value), 'pay');
  await shot('pay');
  await page.selectOption('#lang', 'zh');
  await page.waitForSelector('#page[data-ready]');
  await page.waitForFunction(() => /命名空间 pay/.test(document.querySelector('#page h1')?.innerText ?? ''));
  assert.match(await page.innerText('#ns-ontime'), /准时触发率/);
  await shot('pay-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => /Namespace pay/.test(document.querySelector('#page h1')?.innerText ?? ''));
  await logout();
});

test('pay\'s page says why its late runs were late', async () => {
  // tick runs 20 s on a 3-s cron: its next fire waits for the running
  // execution and launches well over a second late, with that wait.
  const deadline = Date.now() + WAIT_MS;
  let u;
  for (;;) {
    u = await s.api('GET', '/namespaces/pay/usage');
    if (u.lateRuns.length > 0) break;
    if (Date.now() > deadline) throw new Error('pay never showed a late run: ' + JSON.stringify(u));
    await new Promise((r) => setTimeout(r, 500));
  }
  const run = u.lateRuns[0];
  assert.equal(run.jobName, 'tick');
  assert.match(run.why, /^launched .* after it was due; waited: /);
  await login('alice', 'secret');
  await nav('#/namespaces/pay');
  const late = await page.innerText('#ns-late');
  assert.match(late, /Runs launched more than 1 s late, and why/);
  assert.match(late, /tick/);
  assert.ok(late.includes('waited: '), `the late run's reason on the page: ${late}`);
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /晚于 1 秒启动的运行及原因/.test(document.getElementById('ns-late')?.innerText ?? ''));
  await shot('pay-late-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => /Namespace pay/.test(document.querySelector('#page h1')?.innerText ?? ''));
  await logout();
});

test('bob, who has no role in pay, is refused its page', async () => {
  await login('bob', 'hunter2');
  await nav('#/namespaces/pay');
  assert.match(await page.innerText('#page'), /no role in namespace 'pay'|Not allowed/);
  assert.equal(await page.locator('#ns-chart-cpu').count(), 0, 'no chart of pay for bob');
  const forced = await page.evaluate(async () => {
    const r = await fetch('/api/namespaces/pay/usage', { credentials: 'omit', headers: { Authorization: 'Bearer ' + sessionStorage.getItem('ejc.token') } });
    return r.status;
  });
  assert.equal(forced, 403);
  // his own namespace's page from the link: search, with no capacity set
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.click('#ns-usage');
  await page.waitForSelector('#page[data-page=namespace][data-ready]:not([data-stale])');
  assert.match(await page.innerText('#page h1'), /Namespace search/);
  assert.match(await page.innerText('#ns-cpu'), /0 \/ — \/ —/);
  await shot('bob-search');
  await logout();
  assert.deepEqual(problems, []);
});
