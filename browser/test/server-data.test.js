// The console shows what the server computes, field for field: the cron
// preview comes from GET /api/cron/next (the scheduler's own parser; the
// console has no cron code of its own), and every column of the history
// tables is filled from the API's rows (the Source column once read a field
// the API never sent).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const APP = 'preview_app';
let s, br, page;
const problems = [];
const requests = [];

async function nav(hash) {
  if (await page.evaluate(() => location.hash) === hash) await nav('#/dashboard'); // the same hash would not re-render
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}

before(async () => {
  s = await startScheduler();
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('request', (r) => requests.push(new URL(r.url())));
  await s.api('POST', '/app', { appName: APP, appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await page.goto(s.base + '/');
  await page.fill('#username', s.creds.admin[0]);
  await page.fill('#password', s.creds.admin[1]);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#page[data-page=dashboard][data-ready]');
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

const previewItems = () => page.$$eval('#cron-preview li', (li) => li.map((x) => x.textContent));
// serverFires is the scheduler's own answer, as wall-clock strings
async function serverFires(cron, timeZone) {
  const r = await s.api('GET', `/cron/next?cron=${encodeURIComponent(cron)}&timeZone=${encodeURIComponent(timeZone)}&count=5`);
  return r.fires.map((x) => x.slice(0, 19).replace('T', ' '));
}

test('the register form previews fire times computed by the server', async () => {
  await nav('#/jobs/new');
  await page.fill('#f-timeZone', 'Asia/Shanghai');
  requests.length = 0;
  await page.fill('#f-cron', '0 0 0 1 1 ? 2098-2102');
  await page.waitForFunction(() => document.querySelectorAll('#cron-preview li').length === 5);
  assert.deepEqual(await previewItems(), ['2098-01-01 00:00:00', '2099-01-01 00:00:00', '2100-01-01 00:00:00', '2101-01-01 00:00:00', '2102-01-01 00:00:00']);
  assert.match(await page.textContent('#cron-preview'), /Asia\/Shanghai/);
  const asked = requests.filter((u) => u.pathname === '/api/cron/next');
  assert.ok(asked.length >= 1, 'the preview asked the server');
  assert.equal(asked.at(-1).searchParams.get('cron'), '0 0 0 1 1 ? 2098-2102');
  assert.equal(asked.at(-1).searchParams.get('timeZone'), 'Asia/Shanghai');

  // Quartz specials: the page lists exactly what the scheduler's parser says
  for (const cron of ['0 15 10 ? * 6L', '0 0 0 LW * ?', '0 0 22-2 * * ?', '0 0 0 ? * 2#5']) {
    const want = await serverFires(cron, 'Asia/Shanghai');
    await page.fill('#f-cron', cron);
    await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll('#cron-preview li')].map((x) => x.textContent)) === w, JSON.stringify(want));
    assert.equal(await page.locator('.fr.bad[data-field=cron]').count(), 0);
  }
  await screenshot(page, { path: join(ARTIFACTS, 'preview-server.png'), fullPage: true });
});

test('a bad expression shows the server\'s message on the cron field', async () => {
  await nav('#/jobs/new');
  await page.fill('#f-cron', '0 0 25 * * ?');
  await page.waitForSelector('.fr.bad[data-field=cron]');
  assert.equal((await page.textContent('.fr[data-field=cron] .err')).trim(), 'cron "0 0 25 * * ?": hours: value 25 out of range 0-23');
  assert.equal(await page.locator('#cron-preview li').count(), 0);
  await page.fill('#f-cron', '0 0 0 1 * MON');
  await page.waitForFunction(() => /specify \? in day-of-month or day-of-week/.test(document.querySelector('.fr[data-field=cron] .err').textContent));
});

test('a cron that never fires is flagged, and the server refuses to register it', async () => {
  await nav('#/jobs/new');
  await page.fill('#f-jobName', 'feb30');
  await page.selectOption('#f-appName', APP);
  await page.fill('#f-cron', '0 0 0 30 2 ?');
  await page.waitForSelector('.fr.bad[data-field=cron]');
  assert.match(await page.textContent('#cron-preview'), /never fires/);
  await page.click('#submit');
  assert.equal(await page.locator('.fr.bad[data-field=cron]').count(), 1);
  await assert.rejects(s.api('POST', '/job/register', { jobName: 'feb30', appName: APP, cron: '0 0 0 30 2 ?' }), /400 .*never fires/);
  assert.ok(!requests.some((u) => u.pathname.endsWith('/cron.js')), 'the console loaded a cron implementation of its own');
});

test('the job page lists the server\'s next fire times', async () => {
  await s.api('POST', '/job/register', { jobName: 'weekly', appName: APP, cron: '0 30 9 ? * MON-FRI', timeZone: 'Europe/Berlin', cpuCount: 0.01, memoryMB: 1 });
  await nav('#/jobs/weekly');
  await page.waitForSelector('#job-fires li');
  const want = await serverFires('0 30 9 ? * MON-FRI', 'Europe/Berlin');
  assert.deepEqual(await page.$$eval('#job-fires li', (li) => li.map((x) => x.textContent)), want);
});

test('the job page lists its actual fires: several crons, jitter and a calendar, and the form edits them', async () => {
  await s.api('PUT', '/namespaces/default/calendars/biz', { timeZone: 'UTC', weekdays: ['MON', 'TUE', 'WED', 'THU', 'FRI'] });
  await s.api('POST', '/job/register', { jobName: 'spread', appName: APP, cron: '0 0 9 * * ?', crons: ['0 H 17 * * ?'], jitter: '10m', calendar: 'biz', timeZone: 'UTC', cpuCount: 0.01, memoryMB: 1 });
  await nav('#/jobs/spread');
  await page.waitForSelector('#job-fires li');
  const r = await s.api('GET', '/jobs/spread/next?count=5');
  assert.deepEqual(await page.$$eval('#job-fires li', (li) => li.map((x) => x.textContent)), r.fires.map((x) => x.slice(0, 19).replace('T', ' ')));
  for (const f of r.fires) assert.ok(![0, 6].includes(new Date(f).getUTCDay()), `a weekend fire ${f}`);
  assert.match(await page.textContent('#job-fires-note'), new RegExp(`\\+${r.jitterSeconds} s.*calendar biz`));
  assert.equal(await page.textContent('#job-calendar'), 'biz');
  assert.equal(await page.textContent('#job-crons'), '0 H 17 * * ?');
  await nav('#/jobs/spread/edit');
  assert.equal(await page.inputValue('#f-jitter'), '10m');
  assert.equal(await page.inputValue('#f-calendar'), 'biz');
  await page.fill('#f-jitter', 'ten');
  await page.click('#submit');
  await page.waitForSelector('.fr.bad[data-field=jitter]');
  await page.fill('#f-jitter', '0s');
  await page.fill('#f-crons', '');
  await page.click('#submit');
  await page.waitForSelector('#page[data-page=jobs] #job-fires');
  const j = await s.api('GET', '/job/jobs/spread');
  assert.equal(j.jitter, '0s');
  assert.equal((j.crons || []).length, 0);
  // the namespace page lists its calendars
  await nav('#/namespaces/default');
  await page.waitForSelector('#ns-calendars table');
  assert.match(await page.textContent('#ns-calendars'), /biz.*UTC.*MON, TUE, WED, THU, FRI/);
});

// rowsOf reads a rendered table as {header → cell text} objects.
async function rowsOf(sel) {
  return page.$eval(sel, (root) => {
    const heads = [...root.querySelectorAll('thead th')].map((x) => x.textContent.trim());
    return [...root.querySelectorAll('tbody tr')].map((tr) => Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.textContent.trim()])));
  });
}

async function until(what, fn) {
  const deadline = Date.now() + 60000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('every history column shows the API\'s data (Source, sharding item)', { timeout: 120000 }, async () => {
  await s.api('POST', '/job/register', { jobName: 'hist', appName: APP, shardingTotalCount: 2, cpuCount: 0.01, memoryMB: 8 });
  await s.api('POST', '/job/trigger', 'hist');
  const execs = await until('two finished executions', async () => {
    const r = await s.api('GET', '/job/events/executions?jobName=hist&per_page=10&page=1');
    return r.rows.length === 2 && r.rows.every((x) => x.completeTime) ? r.rows : null;
  });
  await until('status traces of both shards finishing', async () => {
    const r = await s.api('GET', '/job/events/statusTraces?jobName=hist&per_page=50&page=1');
    return r.rows.filter((x) => x.state === 'TASK_FINISHED').length === 2;
  });

  await nav('#/history/executions?jobName=hist');
  await page.waitForSelector('#history-table tbody tr');
  const shown = await rowsOf('#history-table');
  assert.equal(shown.length, 2);
  for (const row of shown) {
    const api = execs.find((x) => row['Task id'] === x.taskId);
    assert.ok(api, `row ${JSON.stringify(row)} is not one of the API's`);
    assert.equal(row.Source, api.source, 'the Source column shows the execution source');
    assert.equal(row.Source, 'NORMAL_TRIGGER');
    assert.equal(row.Shard, String(api.shardingItem));
    for (const [col, text] of Object.entries(row)) {
      if (col !== 'Failure cause') assert.notEqual(text, '', `column ${col} is empty in ${JSON.stringify(row)}`);
    }
  }
  await screenshot(page, { path: join(ARTIFACTS, 'history-source.png'), fullPage: true });

  await nav('#/history/traces?jobName=hist');
  await page.waitForSelector('#history-table tbody tr');
  const traces = await rowsOf('#history-table');
  assert.ok(traces.length >= 4);
  for (const row of traces) {
    assert.match(row.Source, /^CLOUD_(SCHEDULER|EXECUTOR)$/);
    assert.match(row.Shard, /^[01]$/, 'the sharding item column shows the trace\'s shardingItems');
    for (const [col, text] of Object.entries(row)) {
      if (col !== 'Message' && col !== 'Original task') assert.notEqual(text, '', `column ${col} is empty in ${JSON.stringify(row)}`);
    }
  }
});

test('no page error', () => {
  assert.deepEqual(problems, []);
});
