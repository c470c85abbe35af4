// What a new operator tripped over (issue 42), in the browser: the queue
// and a waiting job's page name the job holding what it needs and when it
// is expected to free it; a running execution is stopped from its job's
// page (and history says who stopped it, and who triggered each run, with
// its duration); a job's page shows its duration trend and p90; and every
// page fits a 1400×900 and a 1024×768 window: no table wider than its box
// (cut off), no cell whose content runs under its neighbours. Issue 57
// adds, on every page: no word broken mid-word in a cell although it fits
// its cell, no date-time broken across lines, no raw ISO timestamp, no text
// clipped with an ellipsis in a column that could grow to show it, chart
// axes with a unit and distinct tick labels, no chart label cut off at the
// drawing's edge, no error over an empty pane, names with numbers in
// natural order; and a job's secrets (names and targets) on its page, the
// zone the scheduler names under the next fire times, and a console opened
// at http://user:pass@host/ that asks for a login instead of failing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { startScheduler, launchBrowser, watchPage, waitFor, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const APP = 'lay_app';
const LONG = 'settlement_reconciliation_for_partner_banks_eu_west';
const SECRET_VALUE = 'hunter2-never-shown';
const MISSING_TASK = 'gone_job@-@0@-@READY@-@no-such-agent@-@no-such-executor';
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
  const keys = join(await mkdtemp(join(tmpdir(), 'ejc-layout-keys-')), 'secrets.key');
  await writeFile(keys, randomBytes(32).toString('base64') + '\n', { mode: 0o400 });
  s = await startScheduler({ log: 'layout-scheduler.log', args: ['--secrets-key-file', keys] });
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
  // names with numbers (natural order: batch_1, batch_2, batch_10, batch_11), a cron in the
  // scheduler's zone, a job with secrets (names and targets shown, never the value)
  for (const n of [11, 2, 10, 1]) await script(`batch_${n}`, 'true');
  await s.api('PUT', '/namespaces/default/secrets/db-password', { value: SECRET_VALUE });
  await script('with_secrets', 'true', { cron: '0 0 3 * * ?',
    secrets: [{ name: 'db-password', env: 'DB_PASSWORD' }, { name: 'db-password', file: 'tls/db.pass' }] });
  // a refused write for the audit page (a guest's delete)
  const guest = 'Basic ' + Buffer.from(s.creds.guest.join(':')).toString('base64');
  assert.equal((await fetch(s.base + '/api/job/quick/deregister', { method: 'DELETE', headers: { Authorization: guest } })).status, 403);
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
  await screenshot(page, { path: join(ARTIFACTS, 'layout-queue-holder.png'), fullPage: true });
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

test('a job\'s page names its secrets and their targets (never a value) and the zone of its next fire times', async () => {
  await nav('#/jobs/with_secrets');
  await wait('#job-secrets');
  const rows = await page.$$eval('#job-secrets li', (li) => li.map((x) => x.textContent.replace(/\s+/g, ' ').trim()));
  assert.deepEqual(rows, ['db-password → env DB_PASSWORD', 'db-password → file tls/db.pass'], `secrets shown: ${rows}`);
  assert.ok(!(await page.textContent('#page')).includes(SECRET_VALUE), 'no secret value on the page');
  // the zone the scheduler names for a job without its own (GET /api/cron/next's timeZone)
  const { timeZone } = await s.api('GET', '/cron/next?cron=' + encodeURIComponent('0 0 3 * * ?') + '&count=1');
  assert.equal(await page.getAttribute('#job-fires', 'data-zone'), timeZone);
  assert.match(await page.textContent('#job-fires'), new RegExp(`\\(the scheduler's zone: ${timeZone.replace(/[/+]/g, '\\$&')}\\)`));
  // the register form's preview says the same
  await nav('#/jobs/new');
  await page.fill('.fr[data-field=cron] input', '0 0 3 * * ?');
  await page.waitForSelector('#cron-preview ol');
  assert.equal(await page.getAttribute('#cron-preview [data-zone]', 'data-zone'), timeZone);
  // a job without secrets has no such row
  await nav('#/jobs/quick');
  await wait('#job-durations .panel');
  assert.equal(await page.locator('#job-secrets').count(), 0);
});

test('a log that cannot be read says why in its pane, not over an empty one', async () => {
  await nav(`#/logs/${encodeURIComponent(MISSING_TASK)}`);
  await wait('#log-error');
  assert.equal(await page.locator('#log').isVisible(), false, 'the empty log pane is hidden');
  assert.match(await page.textContent('#log-error'), /\S/);
});

test('the console opened at http://user:pass@host/ asks for a login instead of "Cannot reach the scheduler"', async () => {
  const p2 = await br.ctx.newPage();
  try {
    const errs = [];
    p2.on('pageerror', (e) => errs.push(e.message));
    await p2.goto(s.base.replace('://', '://someone:secret@') + '/#/jobs');
    await p2.waitForSelector('form.login #login-note');
    const text = await p2.textContent('body');
    assert.ok(!/Cannot reach the scheduler/.test(text), text);
    assert.match(await p2.textContent('#login-note'), /user name and password in the address/);
    assert.ok(!(await p2.evaluate(() => location.href)).includes('secret@'), 'the credentials are taken out of the address');
    await p2.fill('#username', s.creds.admin[0]);
    await p2.fill('#password', s.creds.admin[1]);
    await p2.click('form.login button[type=submit]');
    await p2.waitForSelector('#page[data-page=dashboard][data-ready] #stat-jobs');
    assert.match(await p2.textContent('#stat-jobs'), /\d/);
    assert.deepEqual(errs, []);
  } finally {
    await p2.close();
  }
});

// measure finds what does not fit: the page wider than the window, a
// table wider than its box (cut off, scrolled), a cell whose content runs
// past its right edge into the next one; and what reads badly (issue 57),
// on every page, whatever its data:
// - a word (a run of non-blanks, or up to a hyphen) broken across lines in a
//   table cell or a key-value row although it fits the cell's width on one
//   line (break-all: "refu" / "sed", "[31000-32" / "000]"), or a short word
//   (10 characters at most) broken because its column is narrower than it;
// - a date-time broken across lines ("2026-11-26" / "23:34:45 UTC");
// - a raw ISO timestamp ("2026-11-26T23:34:39Z") in a cell;
// - a cell's text clipped with an ellipsis although its column could show
//   it whole: the table, with that column's cells unclipped, still fits its
//   box ("NORMAL_TRIG…");
// - a chart's value axis whose tick labels repeat ("0.0 0.0 0.0 0.0 0") or
//   carry no unit (neither on each tick nor as the axis's caption), or a
//   chart's label cut off at the drawing's edge (the last time on the x axis);
// - an error shown over an empty pane (a log pane with nothing in it);
// - names with numbers in lexical order (_1, _10, _11, _2) where opts.names
//   says the page lists names in order.
function measure(opts) {
  const out = { pageOverflow: document.documentElement.scrollWidth - window.innerWidth, cut: [], overlaps: [], read: [] };
  const where = (el) => el.closest('[id]')?.id || '';
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const lineCount = (rects) => {
    const tops = rects.filter((x) => x.width > 0).map((x) => x.top).sort((a, b) => a - b);
    let n = tops.length ? 1 : 0;
    for (let i = 1; i < tops.length; i++) if (tops[i] - tops[i - 1] > 3) n++;
    return n;
  };
  document.querySelectorAll('.tw').forEach((tw, i) => {
    if (tw.scrollWidth > tw.clientWidth + 1) out.cut.push(`table ${i} (${where(tw)}): ${tw.scrollWidth} px in ${tw.clientWidth}`);
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
      out.overlaps.push(`${where(td.closest('table'))} col ${td.cellIndex}: ${td.textContent.trim().slice(0, 40)} runs ${Math.round(c.right - box.right)} px past its cell`);
    }
  });
  // words and date-times broken across lines, raw ISO timestamps
  const DATE_TIME = /(?:\d{4}-)?\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?(?:\.\d+)?(?: ?(?:UTC|Z|[+-]\d\d:\d\d))?/g;
  const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d/;
  for (const cell of document.querySelectorAll('table.t td, dl.kv dd')) {
    if (!shown(cell) || cell.closest('details[open]')) continue;
    const cs = getComputedStyle(cell);
    const room = cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      const text = n.data;
      if (ISO.test(text)) out.read.push(`${where(cell)}: raw ISO time "${text.trim().slice(0, 40)}"`);
      const range = (a, b) => { const r = document.createRange(); r.setStart(n, a); r.setEnd(n, b); return [...r.getClientRects()]; };
      // a word: a run of non-blanks, a hyphen ending one ("read-" / "only" is a break)
      for (const m of text.matchAll(/[^\s-]+-*|-+/g)) {
        if (m[0].length < 2) continue;
        const rects = range(m.index, m.index + m[0].length);
        if (lineCount(rects) < 2) continue;
        const w = rects.reduce((a, x) => a + x.width, 0);
        // broken though it fits its cell, or a short word in a column too narrow for it
        if (w < room - 1 || m[0].length <= 10) out.read.push(`${where(cell)}: "${m[0].slice(0, 40)}" broken mid-word (${Math.round(w)} px, the cell has ${Math.round(room)})`);
      }
      for (const m of text.matchAll(DATE_TIME)) {
        if (lineCount(range(m.index, m.index + m[0].length)) > 1) out.read.push(`${where(cell)}: the time "${m[0]}" broken across lines`);
      }
    }
  }
  // text clipped with an ellipsis in a column that could show it whole
  for (const tw of document.querySelectorAll('.tw')) {
    const table = tw.querySelector('table');
    if (!table || !shown(tw)) continue;
    const cols = new Set();
    for (const td of table.querySelectorAll('tbody td')) {
      if (!shown(td) || td.closest('details[open]')) continue;
      const cs = getComputedStyle(td);
      if (cs.overflowX === 'visible' || td.scrollWidth <= td.clientWidth + 1) continue;
      cols.add(td.cellIndex);
    }
    for (const c of cols) {
      const cells = [...table.rows].map((tr) => tr.cells[c]).filter(Boolean);
      const saved = cells.map((x) => x.getAttribute('style'));
      const clipped = cells.find((x) => x.tagName === 'TD' && x.scrollWidth > x.clientWidth + 1);
      const text = clipped ? clipped.textContent.trim().slice(0, 30) : '';
      for (const x of cells) { x.style.maxWidth = 'none'; x.style.overflow = 'visible'; }
      const fits = tw.scrollWidth <= tw.clientWidth + 1 && document.documentElement.scrollWidth <= window.innerWidth;
      cells.forEach((x, i) => (saved[i] === null ? x.removeAttribute('style') : x.setAttribute('style', saved[i])));
      if (fits) out.read.push(`${where(tw)} col ${c} (${table.rows[0].cells[c]?.textContent.trim()}): "${text}" clipped though the column could show it whole`);
    }
  }
  // chart axes: distinct tick labels with a unit; no label cut off at the edge
  for (const svg of document.querySelectorAll('svg.chart')) {
    if (!shown(svg)) continue;
    const box = svg.getBoundingClientRect();
    const ticks = [...svg.querySelectorAll('g.grid text')].map((x) => x.textContent.trim());
    if (ticks.length) {
      if (new Set(ticks).size !== ticks.length) out.read.push(`${where(svg)}: axis ticks repeat: ${ticks.join(' | ')}`);
      const caption = svg.querySelector('text.unit')?.textContent.trim();
      if (!caption && !ticks.every((x) => /^-?[\d.]+[kM]?\s*[^\d\s.]+/.test(x))) out.read.push(`${where(svg)}: axis without a unit: ${ticks.join(' | ')}`);
    }
    for (const x of svg.querySelectorAll('text')) {
      const r = x.getBoundingClientRect();
      if (r.width && (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)) {
        out.read.push(`${where(svg)}: chart label "${x.textContent}" cut off at the edge`);
      }
    }
  }
  // an error over an empty pane
  if ([...document.querySelectorAll('.alert.bad')].some(shown)) {
    for (const p of document.querySelectorAll('pre, .panel')) {
      if (shown(p) && !p.textContent.trim() && !p.querySelector('svg, canvas, img, input')) out.read.push(`${where(p)}: an error over an empty ${p.tagName.toLowerCase()}`);
    }
  }
  // names in natural order
  if (opts && opts.names) {
    const names = [...document.querySelectorAll('table.t tbody tr td:first-child a')].map((a) => a.textContent.trim());
    const nat = new Intl.Collator('en', { numeric: true });
    for (let i = 1; i < names.length; i++) {
      if (nat.compare(names[i - 1], names[i]) > 0) { out.read.push(`names out of natural order: ${names.slice(Math.max(0, i - 2), i + 2).join(', ')}`); break; }
    }
  }
  return out;
}

for (const [w, hgt] of [[1400, 900], [1024, 768]]) {
  test(`every page fits ${w}×${hgt} and reads well: nothing cut off, broken mid-word, raw or clipped needlessly`, async () => {
    await page.setViewportSize({ width: w, height: hgt });
    await page.evaluate(() => document.querySelectorAll('#toasts .toast').forEach((x) => x.remove()));
    const bad = [];
    for (const [name, hash, sel, opts] of [
      ['dashboard', '#/dashboard', '#dash-stats .stat'], ['jobs', '#/jobs', 'table.t [data-result] a', { names: true }],
      ['job', `#/jobs/${LONG}`, '#job-durations .panel, #job-durations .nodata'], ['job-quick', '#/jobs/quick', '#job-durations .panel'],
      ['job-secrets', '#/jobs/with_secrets', '#job-fires'],
      ['history', '#/history/executions', '#history-table table'], ['traces', '#/history/traces', '#history-table table'],
      ['status', '#/status', '#ready table'], ['cluster', '#/cluster', 'table.t'], ['apps', '#/apps', 'table.t', { names: true }],
      ['audit', '#/audit', '#audit-table table'], ['usage', '#/namespaces/default', '#ns-stats .stat'],
      ['log-missing', `#/logs/${encodeURIComponent(MISSING_TASK)}`, '#log-error, .alert.bad'],
    ]) {
      await nav(hash);
      await wait(sel);
      const m = await page.evaluate(measure, opts || {});
      figures.push(`${w}x${hgt} ${name}: page overflow ${m.pageOverflow} px, tables cut off ${m.cut.length}, cells overlapping ${m.overlaps.length}, reads badly ${m.read.length}`);
      if (m.pageOverflow > 0) bad.push(`${name}: the page is ${m.pageOverflow} px wider than the window`);
      for (const c of m.cut) bad.push(`${name}: ${c}`);
      for (const o of m.overlaps.slice(0, 5)) bad.push(`${name}: ${o}`);
      for (const o of [...new Set(m.read)].slice(0, 8)) bad.push(`${name}: ${o}`);
      await screenshot(page, { path: join(ARTIFACTS, `layout-${w}-${name}.png`), fullPage: false });
    }
    assert.deepEqual(bad, [], bad.join('\n'));
    assert.deepEqual(problems, []);
  });
}
