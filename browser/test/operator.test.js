// What a new operator tripped over (issue 32): a failed task's log opens
// on stderr with its state, exit code and failure cause; the jobs list
// shows each job's last result and a job's page each run's failure cause;
// history rows are dense (at least 15 on a 1400×900 screen); times carry
// their zone (a workflow's next fire in the cron's own zone, under a
// browser in another one); the registration's Warning: 299 is shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, watchPage, waitFor, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const APP = 'op_app';
const ZONE_MARK = /(?:[+-]\d\d:\d\d|UTC)$/;
let s, br, page, inFlight;
const problems = [];

async function nav(hash) {
  if (await page.evaluate(() => location.hash) === hash) await nav('#/dashboard'); // the same hash would not re-render
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await waitFor(page, '#page[data-ready]:not([data-stale])', { inFlight, logPath: s.logPath });
}
const wait = (sel) => waitFor(page, sel, { inFlight, logPath: s.logPath });

async function until(what, fn) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// ended waits until the job's history holds n ended executions.
const ended = (job, n) => until(`${n} ended executions of ${job}`, async () => {
  const r = await s.api('GET', `/job/events/executions?jobName=${job}&per_page=100&page=1`);
  return r.rows.filter((x) => x.completeTime).length >= n ? r.rows : null;
});

before(async () => {
  s = await startScheduler({ log: 'operator-scheduler.log' });
  // a browser on New York's clock, under crons written for Shanghai
  br = await launchBrowser({ viewport: { width: 1400, height: 900 }, timezoneId: 'America/New_York' });
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  inFlight = watchPage(page);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('POST', '/app', { appName: APP, appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register', { jobName: 'good', appName: APP, shardingTotalCount: 2, cpuCount: 0.01, memoryMB: 8 });
  await s.api('POST', '/job/register', { jobName: 'bad', appName: APP, jobType: 'SCRIPT', cpuCount: 0.01, memoryMB: 8,
    props: { 'script.command.line': 'echo doomed on purpose >&2; exit 3' } });
  await s.api('POST', '/job/register', { jobName: 'many', appName: APP, shardingTotalCount: 24, cpuCount: 0.01, memoryMB: 4 });
  for (const j of ['good', 'bad', 'many']) await s.api('POST', '/job/trigger', j);
  await Promise.all([ended('good', 2), ended('bad', 1), ended('many', 24)]);
  await page.goto(s.base + '/');
  await page.fill('#username', s.creds.admin[0]);
  await page.fill('#password', s.creds.admin[1]);
  await page.click('form.login button[type=submit]');
  await wait('#page[data-page=dashboard][data-ready]');
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('a failed task\'s log opens on stderr with its state, exit code and failure cause', async () => {
  const [row] = await ended('bad', 1);
  await nav(`#/logs/${encodeURIComponent(row.taskId)}`);
  await wait('#task-state[data-state=TASK_FAILED]');
  assert.equal((await page.textContent('#task-exit b')).trim(), '3');
  assert.match(await page.textContent('#task-cause'), /exit code 3/);
  assert.equal(await page.locator('nav.tabs a.on[data-stream=stderr]').count(), 1, 'the stderr tab is open');
  await page.waitForFunction(() => /doomed on purpose/.test(document.getElementById('log').textContent));
  await screenshot(page, { path: join(ARTIFACTS, 'op-failed-task-log.png'), fullPage: true });

  // a task that finished opens on stdout, its state shown too
  const good = await ended('good', 2);
  await nav(`#/logs/${encodeURIComponent(good[0].taskId)}`);
  await wait('#task-state[data-state=TASK_FINISHED]');
  assert.equal(await page.locator('nav.tabs a.on[data-stream=stdout]').count(), 1);
  assert.equal(await page.locator('#task-cause').count(), 0);
});

test('the jobs list shows each job\'s last result; a job\'s page each run\'s failure cause', async () => {
  await nav('#/jobs');
  await wait('[data-result="bad"] [data-state=FAILED]');
  await wait('[data-result="good"] [data-state=SUCCEEDED]');
  assert.match(await page.getAttribute('[data-result="bad"] a', 'title'), /exit code 3/);
  assert.match((await page.textContent('[data-result="good"]')).trim(), ZONE_MARK, 'the last result\'s time carries its zone');
  assert.match(await page.getAttribute('[data-result="bad"] a', 'href'), /^#\/logs\/bad/);
  await screenshot(page, { path: join(ARTIFACTS, 'op-jobs-last-result.png'), fullPage: true });

  await nav('#/jobs/bad');
  await page.waitForFunction(() => [...document.querySelectorAll('th')].some((x) => x.textContent === 'Failure cause'));
  await page.waitForFunction(() => [...document.querySelectorAll('td.cause')].some((x) => /exit code 3/.test(x.textContent)));
});

test('history rows are dense: at least 15 visible at 1400×900', async () => {
  await nav('#/history/executions?jobName=many&per_page=50');
  await wait('#history-table tbody tr:nth-child(24)');
  const m = await page.evaluate(() => {
    const rows = [...document.querySelectorAll('#history-table tbody tr')];
    const heights = rows.map((r) => r.getBoundingClientRect().height);
    return { visible: rows.filter((r) => r.getBoundingClientRect().bottom <= window.innerHeight).length, tallest: Math.max(...heights) };
  });
  console.log(`history at 1400×900: ${m.visible} rows visible, tallest row ${m.tallest.toFixed(1)} px`);
  assert.ok(m.visible >= 15, `only ${m.visible} history rows are visible at 1400×900 (tallest ${m.tallest} px)`);
  const started = await page.$$eval('#history-table tbody tr td:nth-last-child(2)', (td) => td.map((x) => x.textContent.trim()));
  for (const v of started) assert.match(v, ZONE_MARK, `a start time without its zone: ${v}`);
  await screenshot(page, { path: join(ARTIFACTS, 'op-history-dense.png') });
});

test('a workflow\'s next fire is shown in its cron\'s zone, marked', async () => {
  await s.api('POST', '/workflow', { name: 'nightly', cron: '0 0 2 * * ?', timeZone: 'Asia/Shanghai', nodes: [{ id: 'a', job: 'good' }] });
  await nav('#/workflows');
  await wait('[data-next-fire]');
  const text = await page.textContent('[data-next-fire]');
  assert.match(text, /\d{4}-\d\d-\d\d 02:00:00 Asia\/Shanghai/, 'the next fire on the cron\'s own clock, with its zone');
  const title = await page.getAttribute('[data-next-fire]', 'title');
  assert.match(title, / 1[34]:00:00 -0[45]:00$/, 'the same instant in the browser\'s zone (New York), marked');
  await nav('#/workflows/nightly');
  await wait('[data-next-fire]');
  assert.match(await page.textContent('[data-next-fire]'), /02:00:00 Asia\/Shanghai/);
});

test('the registration\'s Warning: 299 is shown when registering and updating a job', async () => {
  await nav('#/jobs/new');
  await page.fill('#f-jobName', 'huge');
  await page.selectOption('#f-appName', APP);
  await page.fill('#f-shardingTotalCount', '8');
  await page.fill('#f-cpuCount', '1');
  await page.click('#submit');
  await wait('.toast.api-warning');
  assert.match(await page.textContent('.toast.api-warning'), /Warning: executions will wait until the cluster grows: can never fit: it needs .* for the 8 shards/);
  await screenshot(page, { path: join(ARTIFACTS, 'op-registration-warning.png') });
  await page.click('.toast.api-warning button.x');
  await nav('#/jobs/huge/edit');
  await page.fill('#f-description', 'still too big');
  await page.click('#submit');
  await wait('.toast.api-warning');
});

test('no page error', () => {
  assert.deepEqual(problems, []);
});
