// A task's files in the console (issue 68, item 4): a job of namespace pay
// writes to $ELASTICJOB_TASK_DIR; its task's page lists work/, opens a
// subdirectory and the task's own directory, and saves a file, all in the
// console's namespace; seen from another namespace the task is not there.
// Screenshot: browser/artifacts/taskfiles-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { startScheduler, launchBrowser, watchPage, waitFor, logIn, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

let s, br, page, inFlight, taskId;
const problems = [];

async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await waitFor(page, '#page[data-ready]:not([data-stale])', { inFlight, logPath: s.logPath });
}
async function pick(ns) {
  await page.evaluate(() => document.getElementById('page').setAttribute('data-stale', ''));
  await page.selectOption('#namespace', ns);
  await waitFor(page, '#page[data-ready]:not([data-stale])', { inFlight, logPath: s.logPath });
}
const listed = () => page.$$eval('#task-files [data-file], #task-files a[data-dir]', (es) => es.map((e) => e.getAttribute('data-file') || e.getAttribute('data-dir') + '/'));

before(async () => {
  s = await startScheduler({ log: 'taskfiles-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  inFlight = watchPage(page);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('PUT', '/namespaces/pay', {});
  await s.api('POST', '/app?namespace=pay', { appName: 'etl', appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register?namespace=pay', { jobName: 'report', appName: 'etl', jobType: 'SCRIPT', cpuCount: 0.01, memoryMB: 8,
    props: { 'script.command.line': 'echo "report of the run" > "$ELASTICJOB_TASK_DIR/report.txt" && mkdir "$ELASTICJOB_TASK_DIR/parts" && echo part > "$ELASTICJOB_TASK_DIR/parts/p0.csv"' } });
  await s.api('POST', '/job/trigger?namespace=pay', 'report');
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const r = await s.api('GET', '/job/events/executions?namespace=pay&jobName=report&per_page=10&page=1');
    const done = r.rows.find((x) => x.completeTime);
    if (done) { assert.ok(done.success, 'the job ran: ' + JSON.stringify(done)); taskId = done.taskId; break; }
    if (Date.now() > deadline) throw new Error('the job did not end');
    await new Promise((res) => setTimeout(res, 250));
  }
  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('a task\'s page lists the files it wrote, opens a directory and saves a file, in its namespace', async () => {
  await pick('pay');
  await nav(`#/logs/${encodeURIComponent(taskId)}`);
  await waitFor(page, '#task-files[data-ready]', { inFlight, logPath: s.logPath });
  assert.deepEqual(await listed(), ['work/parts/', 'work/report.txt'], 'work/ first: directories, then files');
  await screenshot(page, { path: join(ARTIFACTS, 'taskfiles-work.png'), fullPage: true });

  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-download="work/report.txt"]')]);
  assert.equal(dl.suggestedFilename(), 'report.txt');
  assert.equal(await readFile(await dl.path(), 'utf8'), 'report of the run\n');

  await page.click('#task-files a[data-dir="work/parts"]');
  await page.waitForSelector('#task-files [data-file="work/parts/p0.csv"]');
  assert.match(await page.textContent('#files-path'), /work \/ parts/);
  await page.click('#files-path a[data-dir=""]'); // the task's directory: its logs beside work/
  await page.waitForSelector('#task-files a[data-dir="work"]');
  const root = await listed();
  for (const f of ['stdout', 'stderr', 'work/']) assert.ok(root.includes(f), `${f} in ${root}`);
  assert.equal(await page.locator('#files-error').count(), 0);
});

test('from another namespace the task and its files are not there', async () => {
  await pick('default'); // a switch of namespace goes to the dashboard
  await nav(`#/logs/${encodeURIComponent(taskId)}`);
  await page.waitForSelector('#task-files[data-ready]', { state: 'attached' }); // empty: nothing to list
  assert.equal(await page.locator('#task-files [data-file]').count(), 0);
  await page.waitForSelector('#files-error');
  assert.match(await page.textContent('#files-error'), /not found|no task|unknown/i);
  assert.deepEqual(problems, []);
});
