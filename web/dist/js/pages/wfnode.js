// A node of a workflow run: its definition and state, its tasks (each
// with a link to its stdout and stderr), the inputs it got from the nodes
// it depends on and the outputs it wrote.
import { t } from '../i18n.js';
import { enc, optional, engineCan } from '../api.js';
import { h, clear, btn, table, tag, kv, fmtTime } from '../ui.js';

const KIND = { SUCCEEDED: 'ok', FAILED: 'bad', CANCELLED: 'bad', RUNNING: 'blue', QUEUED: 'warn' };
export const nodeTag = (s) => h('span.tag' + (KIND[s] ? '.' + KIND[s] : ''), { 'data-node-state': s, title: t('wf.ns.' + s, null, '') }, s);
const taskKind = (s) => (s === 'TASK_FINISHED' ? 'ok' : s === 'TASK_RUNNING' || s === 'TASK_STARTING' || s === 'TASK_STAGING' ? 'blue' : 'bad');

// inputName: the environment variable a downstream node reads an output
// under: ELASTICJOB_INPUT_<NODE>_<KEY>, upper case, other characters as _.
export const inputName = (node, key) => `ELASTICJOB_INPUT_${node}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');

// tasks: the running ones, then every shard's last task (newest info wins)
function tasksOf(n) {
  const rows = new Map();
  for (const s of n.shards || []) rows.set(s.taskId, { item: s.shardingItem, taskId: s.taskId, state: s.state, startedAt: s.startedAt, endedAt: s.endedAt, message: s.message || '' });
  for (const r of n.running || []) rows.set(r.taskId, { item: r.shardingItem, taskId: r.taskId, state: r.state, startedAt: r.launchedAt, host: r.hostname, message: '' });
  for (const id of n.taskIds || []) if (!rows.has(id)) rows.set(id, { item: +(id.split('@-@')[1] ?? NaN), taskId: id, state: '', message: '' });
  return [...rows.values()].sort((a, b) => a.item - b.item);
}

export function nodePanel(box, n, run, { onSelect, onClose }) {
  const deps = n.dependsOn || [];
  const link = (id) => h('a', { href: '#', 'data-goto-node': id, onclick: (e) => { e.preventDefault(); onSelect(id); } }, id);
  const rule = n.trigger || 'allSucceeded';
  const rows = [
    [t('wf.job'), h('a', { href: `#/jobs/${enc(n.job)}` }, n.job)],
    deps.length ? [t('wf.dependsOn'), deps.flatMap((d, i) => (i ? [', ', link(d)] : [link(d)]))] : [t('wf.dependsOn'), t('wf.root')],
    deps.length ? [t('wf.trigger'), h('span', h('code', rule), ' — ', t('wf.rule.' + rule, null, ''))] : null,
  ];
  if (run) {
    rows.push([t('state'), nodeTag(n.state)], [t('wf.attempt'), String(n.attempt)],
      n.queuedAt ? [t('wf.queuedAt'), fmtTime(n.queuedAt)] : null, n.startedAt ? [t('h.startTime'), fmtTime(n.startedAt)] : null,
      n.endedAt ? [t('h.completeTime'), fmtTime(n.endedAt)] : null,
      n.parameter !== undefined ? [t('f.jobParameter'), h('code', n.parameter)] : null,
      n.skipReason ? [t('wf.skipReason'), h('span', { id: 'node-skip' }, n.skipReason)] : null,
      n.message ? [t('h.message'), h('span', { id: 'node-message' }, n.message)] : null,
      n.runKey ? [t('wf.runKey'), h('span.mono', n.runKey)] : null);
  } else if (n.jobParameter !== undefined) rows.push([t('f.jobParameter'), h('code', n.jobParameter)]);
  clear(box, h('div.panel.node-panel', { 'data-node': n.id },
    h('h2', { style: { marginTop: 0, display: 'flex', gap: '10px', alignItems: 'center' } }, t('wf.node'), h('span.mono', n.id),
      run ? nodeTag(n.state) : null, h('span', { style: { marginLeft: 'auto' } }, btn('×', onClose, 'sm', { 'aria-label': t('wf.close'), id: 'node-close' }))),
    kv(rows),
    run ? tasksTable(n) : h('p.muted', t('wf.pickRun')),
    run ? inputsTable(n, run) : null,
    run ? outputsTable(n) : null));
}

function tasksTable(n) {
  const rows = tasksOf(n);
  const el = h('div', { id: 'node-tasks' }, h('h3', t('wf.tasks')), table([
    { label: t('f.shardingItem'), render: (r) => (Number.isFinite(r.item) ? String(r.item) : '') },
    { label: t('taskId'), cls: 'wrap', render: (r) => h('a.mono', { href: `#/logs/${enc(r.taskId)}`, 'data-task': r.taskId }, r.taskId) },
    { label: t('hostname'), render: (r) => h('span', { 'data-host': r.taskId }, r.host || h('span.muted', r.taskId.split('@-@')[3] || '')) },
    { label: t('state'), render: (r) => (r.state ? tag(r.state, taskKind(r.state)) : '') },
    { label: t('h.startTime'), render: (r) => fmtTime(r.startedAt) }, { label: t('h.completeTime'), render: (r) => fmtTime(r.endedAt) },
    { label: t('h.message'), cls: 'wrap', key: 'message' },
    engineCan('logs') ? { label: '', cls: 'acts', render: (r) => [h('a.btn.sm', { href: `#/logs/${enc(r.taskId)}?stream=stdout`, 'data-log': 'stdout' }, 'stdout'),
      h('a.btn.sm', { href: `#/logs/${enc(r.taskId)}?stream=stderr`, 'data-log': 'stderr' }, 'stderr')] } : null,
  ].filter(Boolean), rows, { empty: n.state === 'SKIPPED' ? t('wf.noTasksSkipped') : t('wf.noTasks') }));
  fillHosts(el, rows.filter((r) => !r.host).slice(0, 20));
  return el;
}

// fillHosts: the host of a task that ended, from the execution log
// (absent while history is off or not yet written: the agent id stays)
const hosts = new Map(); // taskId → its execution log row's {hostname, ip}, once found
async function fillHosts(el, rows) {
  await Promise.all(rows.map(async (r) => {
    let x = hosts.get(r.taskId);
    if (!x) {
      let res = null;
      try { res = await optional('/job/events/executions', { taskId: r.taskId, per_page: 1 }); } catch { return; }
      x = res && res.rows && res.rows[0];
      if (!x || !(x.hostname || x.ip)) return;
      hosts.set(r.taskId, { hostname: x.hostname, ip: x.ip });
    }
    const cell = el.querySelector(`[data-host="${CSS.escape(r.taskId)}"]`);
    if (cell) clear(cell, x.hostname || x.ip, x.ip && x.hostname && x.ip !== x.hostname ? h('div.muted', x.ip) : null);
  }));
}

function inputsTable(n, run) {
  const rows = [];
  for (const d of n.dependsOn || []) {
    const up = run.nodes.find((x) => x.id === d);
    for (const [k, v] of Object.entries((up && up.outputs) || {}).sort()) rows.push({ from: d, key: k, env: inputName(d, k), value: v });
  }
  return h('div', { id: 'node-inputs' }, h('h3', t('wf.inputs')), table([
    { label: t('wf.fromNode'), render: (r) => h('span.mono', r.from) }, { label: t('wf.outKey'), key: 'key' },
    { label: t('wf.envVar'), cls: 'mono', key: 'env' }, { label: t('wf.value'), cls: 'wrap mono', key: 'value' },
  ], rows, { empty: (n.dependsOn || []).length ? t('wf.noInputs') : t('wf.rootNoInputs') }));
}

function outputsTable(n) {
  const rows = Object.entries(n.outputs || {}).sort().map(([key, value]) => ({ key, value }));
  return h('div', { id: 'node-outputs' }, h('h3', t('wf.outputs')), table([
    { label: t('wf.outKey'), cls: 'mono', key: 'key' }, { label: t('wf.value'), cls: 'wrap mono', key: 'value' },
  ], rows, { empty: t('wf.noOutputs') }));
}

