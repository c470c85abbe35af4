// Browser test of backfills (issue 56) against bin/scheduler (embedded
// engine): a SCRIPT job firing every ten minutes is backfilled over the
// last hour from its page's Backfill… form; its Backfills panel shows the
// six instants' progress until done; a second backfill, paused then
// cancelled from the panel; the panel in zh. A workflow on the same cron is
// backfilled from its page: six runs (source BACKFILL), each node's task
// handed its run's instant (ELASTICJOB_SCHEDULED_TIME, written to its
// outputs). Screenshots: browser/artifacts/backfills-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

let s, br, page;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `backfills-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}

before(async () => {
  s = await startScheduler({ log: 'backfills-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push('console: ' + m.text()); });
  const url = 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz');
  await s.api('POST', '/app', { appName: 'demo', appURL: url, bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register', { jobName: 'report', appName: 'demo', jobType: 'SCRIPT', cron: '0 */10 * * * ?', cpuCount: 0.1, memoryMB: 16,
    props: { 'script.command.line': 'true' } });
});

test('a workflow backfilled from its page: six runs, each node handed its instant; zh', async () => {
  await s.api('POST', '/job/register', { jobName: 'wf_at', appName: 'demo', jobType: 'SCRIPT', cpuCount: 0.1, memoryMB: 16,
    props: { 'script.command.line': 'echo "at=$ELASTICJOB_SCHEDULED_TIME" > "$ELASTICJOB_OUTPUT"' } });
  await s.api('POST', '/workflow', { name: 'nightly', cron: '0 */10 * * * ?', nodes: [{ id: 'stamp', job: 'wf_at' }] });
  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
  await nav('#/workflows/nightly');
  await page.click('#wf-backfill');
  await page.waitForSelector('.modal #backfill-from');
  await shot('wf-dialog');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('.toast.ok');
  const [b] = await s.api('GET', '/job/backfills?workflowName=nightly');
  assert.equal(b.workflowName, 'nightly');
  assert.equal(b.progress.total, 6);
  for (const until = Date.now() + WAIT_MS; ;) {
    const cur = await s.api('GET', '/job/backfills/' + b.id);
    if (cur.state === 'DONE') { assert.equal(cur.progress.done, 6); assert.equal(cur.progress.failed, 0); break; }
    if (Date.now() > until) throw new Error('the workflow backfill never ended: ' + JSON.stringify(cur));
    await new Promise((r) => setTimeout(r, 250));
  }
  const runs = (await s.api('GET', '/workflow/nightly/runs?per_page=20')).rows.filter((r) => r.source === 'BACKFILL');
  assert.equal(runs.length, 6);
  for (const r of runs) {
    const run = await s.api('GET', `/workflow/nightly/runs/${encodeURIComponent(r.runId)}`);
    assert.equal(run.state, 'SUCCEEDED');
    assert.ok(run.scheduledAt, 'run ' + r.runId + ' has no scheduledAt');
    // a SCRIPT job's command gets the sharding context appended: the output's first word is the instant
    assert.equal(new Date(run.nodes[0].outputs.at.split(' ')[0]).getTime(), new Date(run.scheduledAt).getTime(), JSON.stringify(run.nodes[0]));
  }
  await page.waitForFunction(() => /6 done, 0 running, 0 remaining, 0 failed of 6/.test(document.getElementById('wf-backfills')?.innerText ?? ''), null, { timeout: 30000 });
  await shot('wf-done');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /已完成/.test(document.getElementById('wf-backfills')?.innerText ?? ''));
  await shot('wf-panel-zh');
  await page.selectOption('#lang', 'en');
  await logOut(page);
  assert.deepEqual(problems, []);
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('a backfill started from the job page runs six instants; pause and cancel from its panel; zh', async () => {
  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
  await nav('#/jobs/report');
  await page.click('#backfill');
  await page.waitForSelector('.modal #backfill-from');
  await shot('dialog');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('.toast.ok');
  const [b] = await s.api('GET', '/job/backfills?jobName=report');
  assert.equal(b.progress.total, 6);
  for (const until = Date.now() + WAIT_MS; ;) {
    const cur = await s.api('GET', '/job/backfills/' + b.id);
    if (cur.state === 'DONE') { assert.equal(cur.progress.done, 6); break; }
    if (Date.now() > until) throw new Error('the backfill never ended: ' + JSON.stringify(cur));
    await new Promise((r) => setTimeout(r, 250));
  }
  await page.waitForFunction(() => /6 done, 0 running, 0 remaining, 0 failed of 6/.test(document.getElementById('job-backfills')?.innerText ?? ''));
  await shot('done');

  // a second backfill of three earlier days (432 instants), paused then cancelled from the panel
  await s.api('POST', '/job/backfills', { jobName: 'report', from: new Date(Date.now() - 4 * 86400e3).toISOString(), to: new Date(Date.now() - 86400e3).toISOString() });
  await page.waitForSelector('#job-backfills [data-backfill-action=pause]');
  await page.click('#job-backfills [data-backfill-action=pause]');
  await page.waitForSelector('#job-backfills [data-backfill-action=resume]');
  await page.click('#job-backfills [data-backfill-action=cancel]');
  await page.waitForFunction(() => /cancelled/.test(document.getElementById('job-backfills')?.innerText ?? ''));
  const rows = await s.api('GET', '/job/backfills?jobName=report');
  assert.deepEqual(rows.map((r) => r.state), ['CANCELLED', 'DONE']);
  await shot('panel');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /补数/.test(document.getElementById('page')?.innerText ?? '') && /已取消/.test(document.getElementById('job-backfills')?.innerText ?? ''));
  await shot('panel-zh');
  await page.selectOption('#lang', 'en');
  await logOut(page);
  assert.deepEqual(problems, []);
});
