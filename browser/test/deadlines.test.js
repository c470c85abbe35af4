// Browser test of deadlines and start estimates (issue 56) against
// bin/scheduler (embedded engine, 4 CPUs): a SCRIPT job `slow` (3 CPUs,
// `sleep 60`) with runDeadlineSeconds 2 runs; `late` (3 CPUs,
// startDeadlineSeconds 1) waits behind it. The leader's deadline watcher
// raises both alerts; the job pages and the namespace's page list them, the
// status page gives `late` its position and expected start, and the job
// form's deadlines block writes the fields; in zh too. Screenshots:
// browser/artifacts/deadlines-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

let s, br, page;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `deadlines-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
// until the API lists both missed deadlines (the watcher checks every 5 s)
async function bothMissed() {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const rows = await s.api('GET', '/job/deadlines');
    if (rows.length === 2) return rows;
    if (Date.now() > until) throw new Error('the deadlines were never raised: ' + JSON.stringify(rows));
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  s = await startScheduler({ log: 'deadlines-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push('console: ' + m.text()); });
  const url = 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz');
  await s.api('POST', '/app', { appName: 'demo', appURL: url, bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register', { jobName: 'slow', appName: 'demo', jobType: 'SCRIPT', cpuCount: 3, memoryMB: 16,
    runDeadlineSeconds: 2, timeoutSeconds: 120, props: { 'script.command.line': 'sleep 60; true' } });
  await s.api('POST', '/job/register', { jobName: 'late', appName: 'demo', jobType: 'SCRIPT', cpuCount: 3, memoryMB: 16,
    startDeadlineSeconds: 1, props: { 'script.command.line': 'true' } });
  await s.api('POST', '/job/trigger', 'slow');
  const until = Date.now() + WAIT_MS;
  while (!(await s.api('GET', '/job/tasks/running')).some((r) => r.jobName === 'slow')) {
    if (Date.now() > until) throw new Error('slow never ran');
    await new Promise((r) => setTimeout(r, 100));
  }
  await s.api('POST', '/job/trigger', 'late');
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('missed deadlines on the job and namespace pages; position and expected start on the status page', async () => {
  const rows = await bothMissed();
  assert.deepEqual(rows.map((r) => `${r.jobName}:${r.kind}`).sort(), ['late:start', 'slow:run']);
  // the history keeps each as a status trace of state DEADLINE_MISSED
  // (written to the database by the trace writer in the background)
  for (const until = Date.now() + WAIT_MS; ;) {
    const traces = await s.api('GET', '/job/events/statusTraces?jobName=slow&per_page=50');
    if (traces.rows.some((r) => r.state === 'DEADLINE_MISSED' && /^\[run\]/.test(r.message))) break;
    if (Date.now() > until) throw new Error('no DEADLINE_MISSED trace: ' + JSON.stringify(traces.rows.map((r) => r.state)));
    await new Promise((r) => setTimeout(r, 250));
  }
  // and the metric counts it
  const metrics = await (await fetch(s.base + '/metrics', { headers: { Authorization: 'Basic ' + Buffer.from(s.creds.admin.join(':')).toString('base64') } })).text();
  assert.match(metrics, /elasticjob_deadline_missed_total\{job="slow",kind="run",namespace="default"\} 1/);

  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
  await nav('#/jobs/slow');
  if (!(await page.locator('#job-deadlines').count())) throw new Error('no #job-deadlines: ' + problems.join('; ') + ' page: ' + (await page.innerText('#page')).slice(0, 600));
  assert.match(await page.innerText('#job-deadlines'), /Missed deadlines \(1\)[\s\S]*running too long[\s\S]*runDeadlineSeconds 2/);
  assert.equal(await page.innerText('#job-run-deadline'), '2');
  await shot('job');
  await nav('#/namespaces/default');
  await page.waitForSelector('#ns-deadlines');
  const ns = await page.innerText('#ns-deadlines');
  assert.match(ns, /Missed deadlines \(2\)/);
  assert.match(ns, /not started[\s\S]*late/);
  await shot('namespace');

  await nav('#/status');
  await page.waitForFunction(() => /late/.test(document.getElementById('ready')?.innerText ?? ''));
  const ready = await page.innerText('#ready');
  assert.match(ready, /Position[\s\S]*Expected start/);
  const q = await s.api('GET', '/job/tasks/ready');
  const late = q.find((r) => r.jobName === 'late');
  assert.equal(late.position, 1);
  assert.ok(late.estimatedStart, 'slow has a timeout: late has an expected start');
  assert.match(ready, /late\t1\t[^\t]+\t1\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/); // pending, since, position, expected start
  await shot('status');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /排队位置/.test(document.getElementById('ready')?.innerText ?? ''));
  assert.match(await page.innerText('#ready'), /预计开始/);
  await shot('status-zh');
  await page.selectOption('#lang', 'en');
});

test('the job form writes the deadlines', async () => {
  await nav('#/jobs/late/edit');
  await page.waitForSelector('#deadlines[open]'); // open: the job has one
  await page.fill('[data-field=runDeadlineAt] input', '25:00');
  await page.click('#submit');
  assert.match(await page.innerText('[data-field=runDeadlineAt]'), /HH:MM/);
  await page.fill('[data-field=runDeadlineAt] input', '06:30');
  await page.fill('[data-field=startDeadlineSeconds] input', '300');
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.click('#submit');
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
  const j = await s.api('GET', '/job/jobs/late');
  assert.equal(j.startDeadlineSeconds, 300);
  assert.equal(j.runDeadlineAt, '06:30');
  await shot('form');
  await logOut(page);
  assert.deepEqual(problems, []);
});
