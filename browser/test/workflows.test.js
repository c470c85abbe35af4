// Browser tests of the workflow pages against bin/scheduler with real
// executors running SCRIPT jobs: a workflow registered through the JSON
// editor (a cycle and an unknown job refused first, the server's message
// beside the editor with the node ids marked), triggered with a parameter,
// its graph's nodes turning SUCCEEDED / FAILED / SKIPPED live, a node's
// tasks, inputs, outputs and logs, a retry that succeeds, a running run
// cancelled, the run filter, a 50-node DAG laid out readably, zh and en,
// and a guest who sees no write action. Screenshots: browser/artifacts/wf-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScheduler, launchBrowser, ARTIFACTS, WAIT_MS, logIn, screenshot } from '../lib/harness.js';

let s, br, page, dir, shotNo = 0;
const problems = [];

async function shot(name) {
  await page.evaluate(() => document.querySelectorAll('#toasts .toast').forEach((x) => x.remove()));
  await screenshot(page, { path: join(ARTIFACTS, `wf-${String(++shotNo).padStart(2, '0')}-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const login = (user, pass) => logIn(page, user, pass);
const node = (id) => `#wf-graph g.dnode[data-node="${id}"]`;
const waitNode = (id, state, timeout = 30000) => page.waitForSelector(`${node(id)}[data-state="${state}"]`, { timeout });
const waitRun = (state, timeout = 30000) => page.waitForSelector(`#run-summary [data-run-state="${state}"]`, { timeout });
// setJSON replaces the editor's text (as typing would: input event)
const setJSON = (obj) => page.evaluate((v) => { const ta = document.getElementById('wf-json'); ta.value = v; ta.dispatchEvent(new Event('input')); }, JSON.stringify(obj, null, 2));

// SCRIPT jobs: the executor appends the sharding context JSON to the
// command line, hence the trailing '#'.
const job = (jobName, line) => ({ jobName, appName: 'wf_app', jobExecutionType: 'TRANSIENT', jobType: 'SCRIPT', shardingTotalCount: 1,
  cpuCount: 0.1, memoryMB: 16, props: { 'script.command.line': line + ' #' } });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-wf-browser-'));
  s = await startScheduler({ log: 'workflows-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'warning' && m.text().includes('i18n')) problems.push(m.text()); });
  await s.api('POST', '/app', { appName: 'wf_app', bootstrapScript: 'none', cpuCount: 0.1, memoryMB: 32 });
  for (const j of [
    job('wf_extract', 'sleep 2.5; echo extracting; echo rows=42 > "$ELASTICJOB_OUTPUT"'),
    job('wf_transform', 'echo "transform got rows=$ELASTICJOB_INPUT_EXTRACT_ROWS parameter=$ELASTICJOB_JOB_PARAMETER"; echo done=yes > "$ELASTICJOB_OUTPUT"'),
    job('wf_load', 'echo loading'),
    // fails until the test creates the file (the retry then succeeds)
    job('wf_check', `test -f ${dir}/fixed || { echo "check failing on purpose" >&2; exit 3; }; echo check ok`),
    job('wf_alert', 'echo alerting'),
    job('wf_sleep', 'sleep 60'),
    job('wf_other', 'echo x'),
  ]) await s.api('POST', '/job/register', j);
  await s.api('POST', '/workflow', { name: 'slow', nodes: [{ id: 'nap', job: 'wf_sleep' }, { id: 'after', job: 'wf_load', dependsOn: ['nap'] }] });
  await s.api('POST', '/workflow', bigDAG());
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// bigDAG: 50 nodes in uneven layers, each depending on one to three nodes
// of earlier layers (some skipping layers), a few with other trigger rules.
function bigDAG() {
  let seed = 11;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor((seed / 2147483648) * n); };
  const sizes = [3, 8, 12, 10, 9, 6, 2];
  const layers = [];
  const nodes = [];
  const rules = ['oneFailed', 'allDone', 'oneSucceeded'];
  sizes.forEach((size, l) => {
    layers.push([]);
    for (let i = 0; i < size; i++) {
      const id = `n${l}_${i}`;
      const n = { id, job: ['wf_load', 'wf_alert', 'wf_other'][rnd(3)] };
      if (l > 0) {
        const deps = new Set();
        const k = 1 + rnd(3);
        for (let j = 0; j < k; j++) { const from = l - 1 - (rnd(4) === 0 ? Math.min(l - 1, 1 + rnd(2)) : 0); deps.add(layers[from][rnd(layers[from].length)]); }
        n.dependsOn = [...deps];
        if (rnd(6) === 0) n.trigger = rules[rnd(3)];
      }
      layers[l].push(id);
      nodes.push(n);
    }
  });
  return { name: 'big', description: 'fifty nodes', nodes };
}

const ETL = { name: 'etl', description: 'extract, transform, load; a check that fails, and an alert', parameter: 'default-param',
  nodes: [
    { id: 'extract', job: 'wf_extract' },
    { id: 'transform', job: 'wf_transform', dependsOn: ['extract'] },
    { id: 'load', job: 'wf_load', dependsOn: ['transform'] },
    { id: 'check', job: 'wf_check', dependsOn: ['extract'] },
    { id: 'publish', job: 'wf_load', dependsOn: ['check'] },
    { id: 'alert', job: 'wf_alert', dependsOn: ['load', 'check'], trigger: 'oneFailed' },
  ] };

test('admin sees the workflows list', async () => {
  await page.goto(s.base + '/');
  await login(...s.creds.admin);
  await nav('#/workflows');
  assert.equal(await page.locator('#wf-list tbody tr').count(), 2);
  assert.match(await page.textContent('#wf-count'), /2 workflows/);
  await page.fill('#wf-search', 'fifty');
  await page.waitForFunction(() => document.querySelectorAll('#wf-list tbody tr').length === 1 && document.querySelector('#wf-list a[data-wf=big]'));
  await page.fill('#wf-search', '');
  await page.waitForFunction(() => document.querySelectorAll('#wf-list tbody tr').length === 2);
  // disable one from the list; the status filter finds it; enable it again
  await page.click('[data-toggle=big]');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('[data-status=big] .tag.warn');
  await page.selectOption('#wf-status', 'true');
  await page.waitForFunction(() => document.querySelectorAll('#wf-list tbody tr').length === 1 && document.querySelector('#wf-list a[data-wf=big]'));
  assert.equal(await page.locator('[data-trigger=big]').count(), 0, 'no trigger for a disabled workflow');
  await shot('list-disabled-filter');
  await page.click('[data-toggle=big]');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('#wf-list .nodata');
  await page.selectOption('#wf-status', '');
  await page.waitForFunction(() => document.querySelectorAll('#wf-list tbody tr').length === 2 && document.querySelector('[data-status=big] .tag.ok'));
});

test('registers a workflow in the JSON editor: a cycle and an unknown job are refused inline first', async () => {
  await page.click('#register-wf');
  await page.waitForSelector('#wf-json');
  assert.match(await page.inputValue('#wf-json'), /"nodes"/, 'a starter template');
  await page.waitForSelector('#wf-preview svg.dag g.dnode');
  // a cycle: extract → transform → load → extract
  const cyclic = structuredClone(ETL);
  cyclic.nodes[0].dependsOn = ['load'];
  await setJSON(cyclic);
  await page.click('#wf-submit');
  await page.waitForSelector('#wf-error');
  const msg = await page.textContent('#wf-error');
  assert.match(msg, /cycle: (\w+ → ){3}\w+/);
  const marked = await page.$$eval('#wf-error mark.node-ref', (ms) => ms.map((m) => m.getAttribute('data-node-ref')));
  for (const id of ['extract', 'transform', 'load']) assert.ok(marked.includes(id), `${id} marked in ${msg}`);
  assert.equal(await page.locator('#wf-preview g.dnode.marked').count(), 3, 'the cycle marked in the preview');
  assert.ok(await page.locator('#wf-preview path.edge.back').count() >= 1, 'the edge closing the cycle drawn as such');
  const sel = await page.evaluate(() => { const ta = document.getElementById('wf-json'); return ta.value.slice(ta.selectionStart, ta.selectionEnd); });
  assert.match(sel, /"id": "(extract|transform|load)"/, 'the offending node selected in the JSON');
  await shot('editor-cycle');
  // an unknown job: the message names nodes[3], shown with its id
  const unknown = structuredClone(ETL);
  unknown.nodes[3].job = 'no_such_job';
  await setJSON(unknown);
  await page.click('#wf-submit');
  await page.waitForFunction(() => /no_such_job/.test(document.getElementById('wf-error')?.textContent || ''));
  assert.match(await page.textContent('#wf-error'), /nodes\[3\] \(check\)\.job: job 'no_such_job' does not exist/);
  assert.equal(await page.getAttribute('#wf-error mark.node-ref', 'data-node-ref'), 'check');
  assert.equal(await page.locator('#wf-preview g.dnode.marked').count(), 1);
  await shot('editor-unknown-job');
  // broken JSON is caught before sending, with its line
  await page.fill('#wf-json', '{"name": "etl",\n "nodes": [}');
  await page.click('#wf-submit');
  await page.waitForFunction(() => /line 2/.test(document.getElementById('wf-error')?.textContent || ''));
  // valid
  await setJSON(ETL);
  await page.click('#wf-format');
  await page.waitForSelector('#wf-preview g.dnode[data-node=alert]');
  await shot('editor-valid');
  await page.click('#wf-submit');
  await page.waitForFunction(() => location.hash.startsWith('#/workflows/etl'));
  await page.waitForSelector('#page[data-page=workflows][data-ready] #wf-graph svg.dag');
  assert.equal(await page.locator('#wf-graph g.dnode').count(), 6);
  assert.equal(await page.locator('#wf-graph g.elabel').count(), 2, 'the two edges into alert carry oneFailed');
  assert.match(await page.textContent('#wf-graph g.elabel'), /oneFailed/);
  assert.match(await page.textContent('#run-summary'), /No run yet/);
});

let runId;
test('triggers it with a parameter; the graph turns SUCCEEDED, FAILED and SKIPPED live', async () => {
  // record every state each box shows, to see the graph change in place
  await page.evaluate(() => {
    window.__seen = {};
    const mark = () => document.querySelectorAll('#wf-graph g.dnode').forEach((g) => {
      const id = g.getAttribute('data-node');
      const list = (window.__seen[id] ||= []);
      const st = g.getAttribute('data-state');
      if (list[list.length - 1] !== st) list.push(st);
    });
    new MutationObserver(mark).observe(document.getElementById('wf-graph'), { attributes: true, subtree: true, childList: true, attributeFilter: ['data-state'] });
  });
  await page.click('#wf-trigger');
  await page.waitForSelector('.modal #wf-trigger-param');
  assert.equal(await page.inputValue('.modal #wf-trigger-param'), 'default-param');
  await page.fill('.modal #wf-trigger-param', 'from-the-browser');
  await page.fill('.modal #wf-trigger-key', 'browser-key-1');
  await shot('trigger-dialog');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('#run-live');
  await waitNode('extract', 'RUNNING');
  await shot('run-live');
  await waitRun('FAILED');
  runId = await page.textContent('#run-id');
  for (const [id, st] of [['extract', 'SUCCEEDED'], ['transform', 'SUCCEEDED'], ['load', 'SUCCEEDED'], ['check', 'FAILED'], ['publish', 'SKIPPED'], ['alert', 'SUCCEEDED']]) {
    assert.equal(await page.getAttribute(node(id), 'data-state'), st, id);
  }
  assert.match(await page.textContent(`${node('publish')} title`), /upstream 'check' failed/, 'the skip reason as the tooltip');
  assert.match(await page.textContent(`${node('transform')} text.nst`), /SUCCEEDED · done=yes/, 'an outputs summary');
  const seen = await page.evaluate(() => window.__seen);
  assert.ok(seen.alert.length >= 2 && seen.alert[0] === 'PENDING' && seen.alert.at(-1) === 'SUCCEEDED', `alert went ${seen.alert}`);
  assert.ok(seen.extract.includes('RUNNING'), `extract went ${seen.extract}`);
  assert.equal(await page.locator('#run-cancel').count(), 0, 'no cancel on a finished run');
  assert.equal(await page.locator('#run-retry').count(), 1, 'retry on a failed run');
  assert.match(await page.textContent('#wf-runs tbody'), /FAILED/);
  await shot('run-failed');
  // the same idempotency key starts nothing new
  await page.click('#wf-trigger');
  await page.fill('.modal #wf-trigger-key', 'browser-key-1');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('.toast.ok:has-text("already started run")');
  assert.equal(await page.locator('#wf-runs tbody tr').count(), 1);
});

test("a node's tasks, inputs and outputs; its stdout and stderr in the log viewer", async () => {
  await page.click(node('transform'));
  await page.waitForSelector('#node-panel .node-panel[data-node=transform] #node-tasks a[data-task]');
  const inputs = await page.textContent('#node-inputs');
  assert.match(inputs, /ELASTICJOB_INPUT_EXTRACT_ROWS/);
  assert.match(inputs, /42/);
  assert.match(await page.textContent('#node-outputs'), /done.*yes/);
  assert.match(await page.textContent('#node-tasks'), /TASK_FINISHED/);
  await page.waitForFunction(() => /node=transform/.test(location.hash));
  await shot('node-panel');
  await page.click('#node-tasks a[data-log=stdout]');
  await page.waitForSelector('#page[data-page=logs][data-ready]');
  assert.match(await page.textContent('#log'), /transform got rows=42 parameter=from-the-browser/);
  await shot('node-stdout');
  await page.goBack();
  await page.waitForSelector('#node-panel .node-panel[data-node=transform]');
  await page.click(node('check'));
  await page.waitForSelector('#node-panel .node-panel[data-node=check] #node-tasks a[data-log=stderr]');
  assert.match(await page.textContent('#node-message'), /TASK_FAILED/);
  await page.click('#node-tasks a[data-log=stderr]');
  await page.waitForSelector('#page[data-page=logs][data-ready]');
  assert.match(await page.textContent('#log'), /check failing on purpose/);
  await page.goBack();
  await page.waitForSelector('#node-panel .node-panel[data-node=check]');
  await page.click(node('publish'));
  await page.waitForSelector('#node-skip');
  assert.match(await page.textContent('#node-skip'), /upstream 'check' failed/);
});

test('retries the failed run: it runs the failed and skipped nodes again and succeeds', async () => {
  await writeFile(join(dir, 'fixed'), '');
  await page.click('#run-retry');
  await page.click('.modal [data-confirm]');
  await waitRun('SUCCEEDED');
  assert.equal(await page.textContent('#run-id'), runId, 'the same run');
  assert.match(await page.textContent('#run-summary'), /Attempt 2/);
  for (const id of ['extract', 'transform', 'load', 'check', 'publish', 'alert']) assert.equal(await page.getAttribute(node(id), 'data-state'), 'SUCCEEDED', id);
  assert.equal(await page.locator('#run-retry').count(), 0, 'no retry once it succeeded');
  await shot('run-retried');
});

test('cancels a running run from its page; the run filter', async () => {
  await nav('#/workflows');
  await page.click('[data-trigger=slow]');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('.toast.ok:has-text("slow")');
  await page.click('#wf-list a[data-wf=slow]');
  await page.waitForSelector('#page[data-page=workflows][data-ready] #wf-graph svg.dag');
  await waitNode('nap', 'RUNNING');
  await shot('slow-running');
  await page.click('#run-cancel');
  await page.click('.modal [data-confirm]');
  await waitRun('CANCELLED');
  assert.equal(await page.getAttribute(node('nap'), 'data-state'), 'CANCELLED');
  assert.equal(await page.getAttribute(node('after'), 'data-state'), 'SKIPPED');
  assert.equal(await page.locator('#run-retry').count(), 1, 'a cancelled run can be retried');
  await shot('slow-cancelled');
  await page.selectOption('#run-filter', 'SUCCEEDED');
  await page.waitForSelector('#wf-runs .nodata');
  await page.selectOption('#run-filter', 'FAILED,CANCELLED');
  await page.waitForFunction(() => document.querySelectorAll('#wf-runs tbody [data-run-state=CANCELLED]').length === 1);
});

test('a 50-node DAG is laid out readably', async () => {
  const t0 = Date.now();
  await nav('#/workflows/big');
  await page.waitForSelector('#wf-graph svg.dag');
  const ms = Date.now() - t0;
  const g = await page.evaluate(() => {
    const svg = document.querySelector('#wf-graph svg.dag');
    const vb = svg.viewBox.baseVal;
    const boxes = [...svg.querySelectorAll('g.dnode')].map((n) => {
      const b = n.getBBox(), m = n.transform.baseVal.consolidate().matrix;
      const r = n.querySelector('rect.box').getBoundingClientRect();
      return { id: n.getAttribute('data-node'), x: b.x + m.e, y: b.y + m.f, w: b.width, h: b.height, screen: { x: r.x, y: r.y, w: r.width, h: r.height } };
    });
    const font = parseFloat(getComputedStyle(svg.querySelector('text.nid')).fontSize) * (svg.getBoundingClientRect().width / vb.width);
    const labels = [...svg.querySelectorAll('g.elabel')].map((l) => { const r = l.querySelector('rect').getBoundingClientRect(); return { to: l.dataset.to, x: r.x, y: r.y, w: r.width, h: r.height }; });
    return { vb: { w: vb.width, h: vb.height }, boxes, font, edges: svg.querySelectorAll('path.edge').length, labels,
      crossings: +svg.dataset.crossings, initial: +svg.dataset.crossingsInitial, dir: svg.dataset.dir };
  });
  const def = bigDAG();
  assert.equal(g.boxes.length, 50);
  assert.equal(g.edges, def.nodes.reduce((a, n) => a + (n.dependsOn || []).length, 0));
  const apart = (p, q) => p.x + p.w <= q.x || q.x + q.w <= p.x || p.y + p.h <= q.y || q.y + q.h <= p.y;
  // every edge into a node with another rule is labelled (edges that meet
  // so closely that their labels would coincide share one), no two labels overlap
  const ruled = def.nodes.filter((n) => n.trigger);
  assert.ok(g.labels.length <= ruled.reduce((a, n) => a + n.dependsOn.length, 0) && g.labels.length >= ruled.length, `${g.labels.length} labels`);
  for (const n of ruled) assert.ok(g.labels.some((l) => l.to === n.id), `${n.id}'s rule shown`);
  for (let i = 0; i < g.labels.length; i++) for (let j = i + 1; j < g.labels.length; j++) assert.ok(apart(g.labels[i], g.labels[j]), `labels into ${g.labels[i].to} and ${g.labels[j].to} overlap`);
  for (const b of g.boxes) assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.w <= g.vb.w && b.y + b.h <= g.vb.h, `${b.id} inside the viewBox`);
  for (let i = 0; i < g.boxes.length; i++) {
    for (let j = i + 1; j < g.boxes.length; j++) assert.ok(apart(g.boxes[i].screen, g.boxes[j].screen), `${g.boxes[i].id} and ${g.boxes[j].id} overlap`);
  }
  assert.ok(g.font >= 10, `node ids drawn at ${g.font.toFixed(1)} px`);
  assert.ok(g.crossings <= g.initial, `crossings ${g.crossings} after ordering, ${g.initial} before`);
  console.log(`50-node DAG: page rendered in ${ms} ms; ${g.dir}, ${g.vb.w}×${g.vb.h}, ${g.edges} edges, crossings ${g.initial} → ${g.crossings}, id font ${g.font.toFixed(1)} px`);
  await shot('big-dag');
  // fit: the whole graph in view
  await page.click('#dag-fit');
  const inView = await page.evaluate(() => {
    const w = document.querySelector('#wf-graph .dag-wrap').getBoundingClientRect();
    return [...document.querySelectorAll('#wf-graph g.dnode rect.box')].every((r) => { const b = r.getBoundingClientRect(); return b.left >= w.left - 1 && b.right <= w.right + 1 && b.top >= w.top - 1 && b.bottom <= w.bottom + 1; });
  });
  assert.ok(inView, 'after Fit every node is inside the visible area');
  await screenshot(page.locator('#wf-graph'), { path: join(ARTIFACTS, `wf-${String(++shotNo).padStart(2, '0')}-big-dag-fit.png`) });
  await page.click('#dag-100');
  await page.click('#dag-dir');
  await page.waitForSelector('#wf-graph svg.dag[data-dir]');
  await screenshot(page.locator('#wf-graph'), { path: join(ARTIFACTS, `wf-${String(++shotNo).padStart(2, '0')}-big-dag-other-direction.png`) });
});

test('zh and en', async () => {
  await page.selectOption('#lang', 'zh');
  await nav('#/workflows');
  assert.match(await page.textContent('h1'), /工作流/);
  assert.match(await page.textContent('#wf-list thead'), /名称.*节点.*最近运行/);
  await shot('list-zh');
  await nav(`#/workflows/etl?run=${encodeURIComponent(runId)}&node=check`);
  await page.waitForSelector('#node-panel .node-panel[data-node=check]');
  assert.match(await page.textContent('#page'), /图与运行/);
  assert.match(await page.textContent('.dag-legend'), /已跳过|触发规则已无法满足/);
  assert.match(await page.textContent('#node-panel'), /任务/);
  await shot('workflow-zh');
  await nav('#/workflows/etl/edit');
  assert.match(await page.inputValue('#wf-json'), /"name": "etl"/, 'the stored definition, to update');
  await shot('editor-zh');
  await page.selectOption('#lang', 'en');
  await nav(`#/workflows/etl?run=${encodeURIComponent(runId)}`);
  assert.match(await page.textContent('#page'), /Graph and run/);
  await shot('workflow-en');
  await nav('#/workflows');
  await shot('list-en');
});

test('updates a workflow through the editor', async () => {
  await nav('#/workflows/slow/edit');
  const cur = JSON.parse(await page.inputValue('#wf-json'));
  assert.equal(cur.name, 'slow');
  assert.equal(cur.disabled, undefined, 'state fields are not part of the definition');
  cur.description = 'now with a description';
  cur.name = 'renamed';
  await setJSON(cur);
  await page.click('#wf-submit');
  await page.waitForSelector('#wf-error');
  assert.match(await page.textContent('#wf-error'), /cannot change/);
  cur.name = 'slow';
  await setJSON(cur);
  await page.click('#wf-submit');
  await page.waitForFunction(() => location.hash.startsWith('#/workflows/slow') && !location.hash.includes('edit'));
  await page.waitForSelector('#page[data-page=workflows][data-ready] #wf-info');
  assert.match(await page.textContent('#wf-info'), /now with a description/);
});

test('a guest sees the workflows and no write action', async () => {
  await page.click('#logout');
  await login(...s.creds.guest);
  await nav('#/workflows');
  assert.equal(await page.locator('#wf-list tbody tr').count(), 3);
  assert.equal(await page.locator('[data-write]').count(), 0);
  await nav(`#/workflows/etl?run=${encodeURIComponent(runId)}`);
  await page.waitForSelector('#wf-graph g.dnode[data-state=SUCCEEDED]');
  assert.equal(await page.locator('[data-write]').count(), 0);
  await nav('#/workflows/slow');
  await page.waitForSelector('#wf-graph g.dnode[data-state=CANCELLED]');
  assert.equal(await page.locator('[data-write], #run-retry, #run-cancel').count(), 0);
  await shot('guest');
  const r = await page.evaluate(async () => (await fetch('/api/workflow/slow/trigger', { method: 'POST', headers: { Authorization: 'Bearer ' + sessionStorage.getItem('ejc.token') } })).status);
  assert.equal(r, 403, 'the server refuses a guest anyway');
  assert.deepEqual(problems, []);
});
