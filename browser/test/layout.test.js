// What a new operator tripped over (issue 42), in the browser: the queue
// and a waiting job's page name the job holding what it needs and when it
// is expected to free it; a running execution is stopped from its job's
// page (and history says who stopped it, and who triggered each run, with
// its duration); a job's page shows its duration trend and p90; and every
// page fits a 1400×900 and a 1024×768 window: no table wider than its box
// (cut off), no cell whose content runs under its neighbours.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { startScheduler, launchBrowser, watchPage, waitFor, ROOT, ARTIFACTS, WAIT_MS } from '../lib/harness.js';

const APP = 'lay_app';
const LONG = 'settlement_reconciliation_for_partner_banks_eu_west';
let s, br, page, inFlight;
const problems = [];
const figures = [];

async function nav(hash) {
  if (await page.evaluate(() => location.hash) === hash) await nav('#/dashboard');
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
const ended = (job, n) => until(`${n} ended executions of ${job}`, async () => {
  const r = await s.api('GET', `/job/events/executions?jobName=${job}&per_page=100&page=1`);
  return r.rows.filter((x) => x.completeTime).length >= n ? r.rows : null;
});
const script = (name, cmd, extra = {}) => s.api('POST', '/job/register', { jobName: name, appName: APP, jobType: 'SCRIPT', cpuCount: 0.05, memoryMB: 8,
  props: { 'script.command.line': cmd }, ...extra });

before(async () => {
  s = await startScheduler({ log: 'layout-scheduler.log' });
  br = await launchBrowser({ viewport: { width: 1400, height: 900 } });
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  inFlight = watchPage(page);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('POST', '/app', { appName: APP, appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  // rows as wide as real ones: a long job name, many shards, long failure causes
  await script(LONG, 'echo "partner ledger $ELASTICJOB_SHARDING_ITEM does not balance: expected 1,204,332.18 EUR, found 1,204,331.90 EUR after netting 3 late files" >&2; exit 2',
    { shardingTotalCount: 8 });
  await script('quick', 'sleep 0.3; true');
  for (let i = 0; i < 3; i++) {
    await s.api('POST', '/job/trigger', 'quick');
    await ended('quick', i + 1);
  }
  await s.api('POST', '/job/trigger', LONG);
  await ended(LONG, 8);
  await page.goto(s.base + '/');
  await page.fill('#username', s.creds.admin[0]);
  await page.fill('#password', s.creds.admin[1]);
  await page.click('form.login button[type=submit]');
  await wait('#page[data-page=dashboard][data-ready]');
});

after(async () => {
  await writeFile(join(ARTIFACTS, 'layout-figures.txt'), figures.join('\n') + '\n').catch(() => {});
  if (br) await br.close();
  if (s) await s.stop();
});

test('a waiting job names the job holding what it needs and when it should free it; stop that run from its page', async () => {
  // hog holds 3.6 of the machine's 4 CPUs; waiter needs 1
  await script('hog', 'sleep 300; true', { cpuCount: 3.6 });
  await script('waiter', 'echo ran; true', { cpuCount: 1 });
  await s.api('POST', '/job/trigger', 'hog');
  await until('hog to run', async () => (await s.api('GET', '/job/tasks/running')).some((r) => r.jobName === 'hog' && r.state === 'TASK_RUNNING'));
  // the waiting execution is triggered from the console: history says so
  await nav('#/jobs/waiter');
  await page.click('#trigger');
  await page.click('.modal [data-confirm]');
  await until('the waiter\'s recorded reason', async () => {
    const q = await s.api('GET', '/job/tasks/ready');
    const w = q.find((r) => r.jobName === 'waiter');
    return w && w.waiting && w.waiting.holders ? w : null;
  });
  await nav('#/status');
  const holders = page.locator('#ready .waiting .holders');
  await holders.first().waitFor();
  const text = await holders.first().textContent();
  assert.match(text, /^waits for 1 CPU and 8 MB; job hog holds 3\.6 CPUs and 8 MB until it ends \(running \d+s(, its timeout|; no earlier run known| of its usual)/);
  assert.equal(await holders.first().getAttribute('data-holders'), 'hog');
  await page.screenshot({ path: join(ARTIFACTS, 'layout-queue-holder.png'), fullPage: true });
  await nav('#/jobs/waiter');
  await wait('#job-waiting .holders');
  assert.match(await page.textContent('#job-waiting'), /job hog holds 3\.6 CPUs/);

  // stop hog's run from its page: hog stays, the waiter runs, history says who stopped it
  await nav('#/jobs/hog');
  await page.waitForSelector('#kill-run:not([hidden])');
  await page.click('#kill-run');
  await page.click('.modal [data-confirm]');
  const [hogRow] = await ended('hog', 1);
  assert.equal(hogRow.failureCause, `killed by console:${s.creds.admin[0]}`);
  const [waiterRow] = await ended('waiter', 1);
  assert.equal(waiterRow.triggeredBy, `console:${s.creds.admin[0]}`);
  assert.equal((await s.api('GET', '/job/hog/disable')), false, 'the job stays enabled');
});

test('a job\'s page shows its duration trend and p90; history has duration and triggered-by columns', async () => {
  await nav('#/jobs/quick');
  await wait('#job-p90[data-p90]');
  const p90 = Number(await page.getAttribute('#job-p90', 'data-p90'));
  assert.ok(p90 >= 300 && p90 < 10000, `p90 ${p90} ms of three runs of sleep 0.3`);
  assert.match(await page.textContent('#job-p90'), /p90 .* over the last 3 successful runs/);
  assert.equal(await page.locator('#job-durations svg polyline').count(), 2, 'the durations and the p90 line');
  await nav('#/history/executions?jobName=quick');
  await wait('#history-table table');
  const heads = await page.$$eval('#history-table th', (ths) => ths.map((th) => th.textContent.trim()));
  for (const want of ['Duration', 'Triggered by', 'Source']) assert.ok(heads.includes(want), `history columns ${heads}`);
  const first = await page.$$eval('#history-table tbody tr:first-child td', (tds) => tds.map((td) => td.textContent.trim()));
  assert.ok(first.includes('api:admin'), `a triggered run says who: ${first}`);
  assert.ok(first.some((c) => /^\d+ ms$|^\d+(\.\d+)? s$/.test(c)), `a duration: ${first}`);
});

// measure finds what does not fit: the page wider than the window, a
// table wider than its box (cut off, scrolled), a cell whose content runs
// past its right edge into the next one.
function measure() {
  const out = { pageOverflow: document.documentElement.scrollWidth - window.innerWidth, cut: [], overlaps: [] };
  document.querySelectorAll('.tw').forEach((tw, i) => {
    if (tw.scrollWidth > tw.clientWidth + 1) out.cut.push(`table ${i} (${tw.closest('[id]')?.id || ''}): ${tw.scrollWidth} px in ${tw.clientWidth}`);
  });
  document.querySelectorAll('table.t td').forEach((td) => {
    if (td.closest('details[open]')) return;
    const box = td.getBoundingClientRect();
    const clips = getComputedStyle(td).overflowX !== 'visible';
    if (clips) return;
    const r = document.createRange();
    r.selectNodeContents(td);
    const c = r.getBoundingClientRect();
    if (c.width && c.right > box.right + 1) {
      out.overlaps.push(`${td.closest('table').closest('[id]')?.id || ''} col ${td.cellIndex}: ${td.textContent.trim().slice(0, 40)} runs ${Math.round(c.right - box.right)} px past its cell`);
    }
  });
  return out;
}

for (const [w, hgt] of [[1400, 900], [1024, 768]]) {
  test(`every page fits ${w}×${hgt}: no table cut off, no cell running under the next`, async () => {
    await page.setViewportSize({ width: w, height: hgt });
    const bad = [];
    for (const [name, hash, sel] of [
      ['dashboard', '#/dashboard', '#dash-stats .stat'], ['jobs', '#/jobs', 'table.t'], ['job', `#/jobs/${LONG}`, '#job-durations .panel, #job-durations .nodata'],
      ['history', '#/history/executions', '#history-table table'], ['traces', '#/history/traces', '#history-table table'],
      ['status', '#/status', '#ready table'], ['cluster', '#/cluster', 'table.t'], ['apps', '#/apps', 'table.t'],
    ]) {
      await nav(hash);
      await wait(sel);
      const m = await page.evaluate(measure);
      figures.push(`${w}x${hgt} ${name}: page overflow ${m.pageOverflow} px, tables cut off ${m.cut.length}, cells overlapping ${m.overlaps.length}`);
      if (m.pageOverflow > 0) bad.push(`${name}: the page is ${m.pageOverflow} px wider than the window`);
      for (const c of m.cut) bad.push(`${name}: ${c}`);
      for (const o of m.overlaps.slice(0, 5)) bad.push(`${name}: ${o}`);
      await page.screenshot({ path: join(ARTIFACTS, `layout-${w}-${name}.png`), fullPage: false });
    }
    assert.deepEqual(bad, [], bad.join('\n'));
    assert.deepEqual(problems, []);
  });
}
