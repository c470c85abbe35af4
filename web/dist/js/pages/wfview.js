// A workflow's page: its definition, its DAG with each node's state in the
// selected run (live while the run is active), a node's tasks, inputs and
// outputs (wfnode.js), the run history with a state filter, and trigger,
// cancel and retry.
import { t } from '../i18n.js';
import { api, get, post, enc, canWrite } from '../api.js';
import { h, clear, btn, wbtn, busy, table, pager, loading, tag, kv, toast, confirmDo, errText, fmtTime, fmtZoned } from '../ui.js';
import { drawGraph } from '../graph.js';
import { nodePanel } from './wfnode.js';
import { backfillPanel, startBackfill, canBackfillWorkflow } from './backfills.js';
import { RUN_STATES, runTag, triggerWorkflow, toggleWorkflow, deleteWorkflow } from './workflows.js';

const EVERY = 1000;
const active = (r) => r && (r.state === 'QUEUED' || r.state === 'RUNNING');

export function fmtDur(from, to) {
  if (!from) return '';
  const ms = (to ? new Date(to) : new Date()) - new Date(from);
  if (!(ms >= 0)) return '';
  if (ms < 10000) return (ms / 1000).toFixed(1) + ' s';
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
// the definition a graph is drawn from; a new one means a new layout
const signature = (nodes) => JSON.stringify(nodes.map((n) => [n.id, n.job, n.dependsOn || [], n.trigger || '']));

export default async function wfview(el, ctx, name) {
  const st = { wf: await get(`/workflow/${enc(name)}`), runId: ctx.query.get('run') || '', run: null, node: ctx.query.get('node') || '',
    filter: ctx.query.get('state') || '', page: 1, per_page: 10, runs: null, sig: '', ticks: 0 };
  if (!st.runId && st.wf.lastRun) st.runId = st.wf.lastRun.runId;
  const head = h('div'), info = h('div.panel', { id: 'wf-info' });
  const runBox = h('div', { id: 'run-summary' });
  const graphBox = h('div.panel.dag-panel', { id: 'wf-graph' });
  const nodeBox = h('div', { id: 'node-panel' });
  const filter = h('select#run-filter', { 'aria-label': t('wf.filterState') }, h('option', { value: '' }, t('wf.allRuns')),
    RUN_STATES.map((s) => h('option', { value: s, selected: s === st.filter }, s)),
    h('option', { value: 'FAILED,CANCELLED', selected: st.filter === 'FAILED,CANCELLED' }, t('wf.failedOrCancelled')));
  const runsBox = h('div', { id: 'wf-runs' }, loading());
  const backfills = h('div', { id: 'wf-backfills' }, loading());
  el.append(head, info, h('h2', t('wf.graphTitle')), runBox, graphBox, nodeBox,
    h('h2', t('wf.runs')), h('div.toolbar', h('label', h('span.muted', t('wf.filterState') + ' '), filter)), runsBox,
    h('h2', t('bf.heading')), backfills);
  const refreshBackfills = backfillPanel(backfills, { workflowName: name });

  function remember() {
    const p = new URLSearchParams();
    if (st.runId) p.set('run', st.runId);
    if (st.node) p.set('node', st.node);
    if (st.filter) p.set('state', st.filter);
    history.replaceState(null, '', `#/workflows/${enc(name)}` + (p.toString() ? '?' + p : ''));
  }

  function drawHead() {
    const w = st.wf;
    clear(head, h('h1', h('a', { href: '#/workflows' }, t('wf.title')), ' / ', h('span', { id: 'wf-name' }, w.name),
      w.disabled ? tag(t('disabled'), 'warn') : tag(t('enabled'), 'ok'),
      h('span.sp', btn(t('refresh'), () => reloadAll(), '', { id: 'wf-reload' }),
        w.disabled ? null : wbtn(t('trigger'), () => triggerWorkflow(w, (r) => selectRun(r.runId, true)), 'primary', { id: 'wf-trigger' }),
        canBackfillWorkflow(w) ? wbtn(t('bf.button'), () => startBackfill({ workflowName: name }, () => { refreshBackfills(); loadRuns(); }), '', { id: 'wf-backfill' }) : null,
        wbtn(t('modify'), () => ctx.go(`/workflows/${enc(name)}/edit`), '', { id: 'wf-edit' }),
        wbtn(w.disabled ? t('enable') : t('disable'), () => toggleWorkflow(name, w.disabled, () => reloadAll()), '', { id: 'wf-toggle' }),
        wbtn(t('delete'), () => deleteWorkflow(name, () => ctx.go('/workflows')), 'danger', { id: 'wf-delete' }))));
    clear(info, kv([
      w.description ? [t('f.description'), w.description] : null,
      [t('f.cron'), w.cron ? h('span', h('span.mono', w.cron), w.nextFireTime ? h('span.muted.zoned', { title: fmtTime(w.nextFireTime), 'data-next-fire': w.nextFireTime }, '  ' + t('wf.next', { time: fmtZoned(w.nextFireTime, w.timeZone) })) : null) : t('wf.onDemand')],
      w.cron ? [t('f.timeZone'), w.timeZone || t('jobs.defaultZone')] : null,
      [t('wf.maxConcurrentRuns'), String(w.maxConcurrentRuns)], [t('f.misfire'), t(w.misfire ? 'wf.misfireAll' : 'wf.misfireOne')],
      [t('f.timeoutSeconds'), w.timeoutSeconds ? `${w.timeoutSeconds} s` : t('jobs.noLimit')],
      [t('wf.defaultParam'), w.parameter ?? '—'], [t('wf.nodes'), String(w.nodes.length)],
      [t('wf.active'), t('wf.activeN', { n: w.activeRuns, q: w.queuedRuns })],
    ]));
  }

  let graph = null;
  function drawGraphFor(nodes) {
    const sig = signature(nodes);
    if (sig !== st.sig || !graph) {
      st.sig = sig;
      clear(graphBox);
      graph = drawGraph(graphBox, nodes, { selected: st.node, onSelect: (id) => selectNode(id) });
    }
    graph.setRun(st.run ? st.run.nodes : null);
    graph.select(st.node);
  }

  function drawRun() {
    const r = st.run;
    if (!r) {
      clear(runBox, h('div.muted.run-none', st.runId ? t('wf.runGone', { run: st.runId }) : t('wf.noRunYet')));
      drawGraphFor(st.wf.nodes);
      drawNode();
      return;
    }
    const live = active(r) ? h('span.live', { id: 'run-live' }, h('i'), t('status.live')) : null;
    clear(runBox, h('div.runbar', h('strong', t('wf.run')), h('span.mono', { id: 'run-id' }, r.runId), runTag(r.state, r.cancelling), live,
      h('span.muted', `${t('wf.attempt')} ${r.attempt} · ${r.source} · ${fmtTime(r.startedAt || r.createdAt)}` + (r.endedAt ? ` → ${fmtTime(r.endedAt)} (${fmtDur(r.startedAt, r.endedAt)})` : '')),
      r.parameter !== undefined ? h('span.muted', `${t('wf.param')}: `, h('code', r.parameter)) : null,
      h('span.grow'), runButtons(r, 'run-')),
    r.reason ? h('div.muted', { id: 'run-reason' }, `${t('wf.reason')}: ${r.reason}`) : null,
    r.fromHistory ? h('div.muted', t('wf.fromHistory')) : null);
    drawGraphFor(r.nodes);
    drawNode();
  }

  // runButtons: cancel while a run is active, retry once it failed or was cancelled
  function runButtons(r, idp) {
    if (!canWrite()) return null;
    return [
      active(r) && !r.cancelling ? wbtn(t('cancel'), () => cancelRun(r), 'sm danger', { id: idp ? idp + 'cancel' : null, 'data-cancel': r.runId }) : null,
      r.state === 'FAILED' || r.state === 'CANCELLED' ? wbtn(t('retry'), () => retryRun(r), 'sm', { id: idp ? idp + 'retry' : null, 'data-retry': r.runId }) : null,
    ];
  }
  const cancelRun = (r) => confirmDo(t('wf.cancelTitle', { run: r.runId }), t('wf.cancelText'), t('wf.cancelRun'), async () => {
    await post(`/workflow/${enc(name)}/runs/${enc(r.runId)}/cancel`);
    toast(t('wf.cancelled', { run: r.runId }), 'ok');
    await selectRun(r.runId, true);
  });
  const retryRun = (r) => confirmDo(t('wf.retryTitle', { run: r.runId }), t('wf.retryText'), t('retry'), async () => {
    await post(`/workflow/${enc(name)}/runs/${enc(r.runId)}/retry`);
    toast(t('wf.retried', { run: r.runId }), 'ok');
    await selectRun(r.runId, true);
  }, { danger: false });

  function drawNode() {
    const nodes = st.run ? st.run.nodes : st.wf.nodes;
    const n = st.node && nodes.find((x) => x.id === st.node);
    if (!n) { clear(nodeBox); return; }
    nodePanel(nodeBox, n, st.run, { onSelect: selectNode, onClose: () => selectNode('') });
  }
  function selectNode(id) {
    st.node = id;
    remember();
    if (graph) graph.select(id);
    drawNode();
    if (id) nodeBox.scrollIntoView({ block: 'nearest' });
  }

  async function loadRun() {
    if (!st.runId) { st.run = null; return; }
    try { st.run = await get(`/workflow/${enc(name)}/runs/${enc(st.runId)}`); } catch (e) {
      if (e.status !== 404) throw e;
      st.run = null;
    }
  }
  async function selectRun(id, reloadList) {
    st.runId = id;
    remember();
    await loadRun();
    drawRun();
    if (reloadList) { await loadRuns(); st.wf = await get(`/workflow/${enc(name)}`); drawHead(); } else markSelectedRow();
  }

  async function loadRuns() {
    let res;
    try {
      res = await api('GET', `/workflow/${enc(name)}/runs`, { query: { state: st.filter, page: st.page, per_page: st.per_page } });
    } catch (e) { clear(runsBox, h('div.alert.bad', errText(e))); return; }
    st.runs = res;
    clear(runsBox, table([
      { label: t('wf.run'), cls: 'nowrap', render: (r) => h('a.mono', { href: `#/workflows/${enc(name)}?run=${enc(r.runId)}`, 'data-run': r.runId,
        onclick: (e) => { e.preventDefault(); selectRun(r.runId); } }, r.runId) },
      { label: t('state'), render: (r) => runTag(r.state, r.cancelling) },
      { label: t('h.source'), key: 'source' }, { label: t('wf.attempt'), key: 'attempt' },
      { label: t('wf.param'), cls: 'wrap', render: (r) => (r.parameter !== undefined ? h('code', r.parameter) : '') },
      { label: t('h.startTime'), cls: 'nowrap', render: (r) => fmtTime(r.startedAt || r.createdAt) },
      { label: t('wf.duration'), render: (r) => fmtDur(r.startedAt, r.endedAt) },
      { label: t('wf.nodes'), render: (r) => countTags(r.nodeStates) },
      { label: t('wf.reason'), cls: 'reason', key: 'reason' },
      { label: '', cls: 'acts', render: (r) => runButtons(r) },
    ], res.rows, { empty: st.filter ? t('wf.noRunsMatch') : t('wf.noRuns') }),
    pager({ page: st.page, perPage: st.per_page, total: res.total, onPage: (p) => { st.page = p; loadRuns(); },
      perPageOptions: [10, 20, 50], onPerPage: (n) => { st.per_page = n; st.page = 1; loadRuns(); } }));
    markSelectedRow();
  }
  function markSelectedRow() {
    for (const a of runsBox.querySelectorAll('a[data-run]')) a.closest('tr').classList.toggle('sel', a.getAttribute('data-run') === st.runId);
  }

  async function reloadAll() {
    st.wf = await get(`/workflow/${enc(name)}`);
    drawHead();
    await Promise.all([loadRun(), loadRuns()]);
    drawRun();
  }

  // live: the selected run while it is active; the run list while one it
  // shows is active, else every few ticks (cron fires, other consoles)
  let timer = null, ticking = false;
  async function tick() {
    if (ticking || document.hidden) return;
    ticking = true;
    try {
      st.ticks++;
      const listActive = st.runs && st.runs.rows.some(active);
      if (active(st.run)) {
        const before = st.run.state;
        await loadRun();
        drawRun();
        if (!active(st.run) || st.run.state !== before) { st.wf = await get(`/workflow/${enc(name)}`); drawHead(); }
      }
      if (listActive || st.ticks % 4 === 0) await loadRuns();
      if (st.ticks % 4 === 0) refreshBackfills();
    } catch { /* the next tick tries again */ } finally { ticking = false; }
  }

  filter.addEventListener('change', () => { st.filter = filter.value; st.page = 1; remember(); loadRuns(); });
  drawHead();
  await Promise.all([loadRun(), loadRuns()]);
  drawRun();
  remember();
  timer = setInterval(tick, EVERY);
  return { cleanup: () => clearInterval(timer) };
}

// countTags: how many nodes are in each state ("3 SUCCEEDED · 1 FAILED")
function countTags(c) {
  const kind = { SUCCEEDED: 'ok', FAILED: 'bad', CANCELLED: 'bad', RUNNING: 'blue', QUEUED: 'warn' };
  return h('span.counts', Object.entries(c || {}).map(([s, n]) => h('span.tag' + (kind[s] ? '.' + kind[s] : ''), { title: s, 'data-count': s }, `${n} ${s}`)));
}
