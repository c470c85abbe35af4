// Browser test of a DAEMON shard's retiring task in the console's task lists: bin/scheduler
// on two clusters (its embedded engine, "local", and bin/mesos-local, "remote"), a DAEMON
// job with moveOverlapSeconds running on remote, moved to local by its clusters while its
// namespace's limit leaves no room for the replacement beside the old task (the retiring
// task counts in the namespace's usage): the move waits, and the old task is listed as
// retiring, as GET /api/job/tasks/running marks it ("retiring": true), on the status page
// and on the job's page, in en and zh. Screenshots: browser/artifacts/retiring-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startScheduler, startMesosLocal, launchBrowser, ARTIFACTS, ROOT, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

let s, mesos, br, page, dir;
const problems = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `retiring-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
// until polls f (a promise of a value or null) until it gives a value.
async function until(what, f) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}
const rows = async () => (await s.api('GET', '/job/tasks/running')).filter((r) => r.jobName === 'resident');

let old; // resident's task on remote
const job = {
  jobName: 'resident', appName: 'demo', jobExecutionType: 'DAEMON', cron: '*/1 * * * * ?', shardingTotalCount: 1,
  cpuCount: 0.1, memoryMB: 32, jobType: 'SCRIPT', props: { 'script.command.line': 'true' },
  clusters: ['remote'], moveOverlapSeconds: 600,
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-retiring-'));
  mesos = await startMesosLocal();
  const list = join(dir, 'clusters.yaml');
  await writeFile(list, `clusters:\n  - {name: local, engine: embedded}\n  - {name: remote, engine: mesos, mesos_url: "${mesos.url}"}\n`, { mode: 0o600 });
  s = await startScheduler({ args: ['--clusters-file', list, '--allow-file-app-urls=true'], log: 'retiring-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'warning' && m.text().includes('i18n')) problems.push(m.text()); });

  await s.api('POST', '/app', { appName: 'demo', appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('POST', '/job/register', job);
  const r = await until('resident running on remote', async () => {
    const rs = await rows();
    return rs.length === 1 && rs[0].agentId.startsWith('remote:') && rs[0].state === 'TASK_RUNNING' ? rs[0] : null;
  });
  old = r.taskId;
  // Its task and its app's executor on remote hold 0.2 CPU; the replacement would need
  // 0.2 more on local: past the limit, so the move waits with the old task retiring.
  await s.api('PUT', '/namespaces/default', { limit: { cpuCount: 0.3, memoryMB: 4096 } });
  await s.api('PUT', '/job/update', { ...job, clusters: ['local'] });
  await until('resident\'s old task retiring', async () => {
    const rs = await rows();
    return rs.length === 1 && rs[0].taskId === old && rs[0].retiring === true ? rs : null;
  });
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (mesos) await mesos.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('the status page marks the retiring task', async () => {
  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
  await nav('#/status');
  const row = page.locator('#running tbody tr', { hasText: old });
  await row.locator('.tag.retiring').waitFor();
  assert.match(await row.innerText(), /TASK_RUNNING\s+retiring/);
  assert.match(await row.locator('.tag.retiring').getAttribute('title'), /^Moving to another cluster: this old task runs until its replacement runs there \(since .+; the move is given up at .+ if the replacement has not run by then\)$/);
  // the replacement waits for the namespace's limit, the overlap counted
  const wait = page.locator('#ready tbody tr', { hasText: 'resident' }).locator('.waiting[data-reason=namespace_limit]');
  await wait.waitFor();
  assert.match(await wait.innerText(), /at its namespace's limit/);
  assert.match(await wait.getAttribute('title'), /of it by the old tasks of DAEMON shards moving with an overlap, until their replacements run/);
  await shot('status');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /退役中/.test(document.getElementById('running')?.innerText ?? ''));
  assert.match(await row.locator('.tag.retiring').getAttribute('title'), /^正在迁往另一集群/);
  await shot('status-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => /retiring/.test(document.getElementById('running')?.innerText ?? ''));
});

test('the job\'s page marks the retiring task; a task that is not retiring is not marked', async () => {
  await nav('#/jobs/resident');
  const row = page.locator('#job-tasks tbody tr', { hasText: old });
  await row.locator('.tag.retiring').waitFor();
  assert.match(await row.innerText(), /TASK_RUNNING\s+retiring/);
  await shot('job');
  // Room for both: the replacement launches beside the old task, which is killed once
  // the replacement runs; the task left is not marked.
  await s.api('PUT', '/namespaces/default', { limit: { cpuCount: 1, memoryMB: 4096 } });
  const moved = await until('resident moved to local', async () => {
    const rs = await rows();
    return rs.length === 1 && rs[0].agentId.startsWith('local:') && rs[0].state === 'TASK_RUNNING' && !rs[0].retiring ? rs[0] : null;
  });
  await nav('#/status');
  await page.locator('#running tbody tr', { hasText: moved.taskId }).waitFor();
  assert.equal(await page.locator('#running .tag.retiring').count(), 0);
  await logOut(page);
  assert.deepEqual(problems, []);
});
