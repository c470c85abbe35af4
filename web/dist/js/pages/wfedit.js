// Register or update a workflow through its JSON: a starter template (with
// registered TRANSIENT jobs) or the stored definition, a live preview of
// the graph, and the server's validation message shown beside the editor
// with the node ids it names marked (click one to find it in the JSON).
import { t } from '../i18n.js';
import { api, get, enc, canWrite, ApiError } from '../api.js';
import { h, clear, btn, busy, toast, errText, debounce, byName } from '../ui.js';
import { drawGraph } from '../graph.js';

const VIEW_FIELDS = ['disabled', 'activeRuns', 'queuedRuns', 'lastRun', 'nextFireTime'];

// formatWorkflow: top-level fields one a line, each node on one line.
export function formatWorkflow(w) {
  const top = Object.entries(w).filter(([k]) => k !== 'nodes').map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const val = (v) => (Array.isArray(v) ? `[${v.map((x) => JSON.stringify(x)).join(', ')}]` : JSON.stringify(v));
  const line = (n) => (n && typeof n === 'object' && !Array.isArray(n) ? `{${Object.entries(n).map(([k, v]) => `${JSON.stringify(k)}: ${val(v)}`).join(', ')}}` : JSON.stringify(n));
  const nodes = (Array.isArray(w.nodes) ? w.nodes : []).map((n) => '    ' + line(n));
  if (Array.isArray(w.nodes) && !w.nodes.length) top.push('  "nodes": []');
  else if (Array.isArray(w.nodes)) top.push(`  "nodes": [\n${nodes.join(',\n')}\n  ]`);
  else if (w.nodes !== undefined) top.push(`  "nodes": ${JSON.stringify(w.nodes)}`);
  return `{\n${top.join(',\n')}\n}\n`;
}

function starter(jobs) {
  const j = (i) => jobs[i % Math.max(1, jobs.length)] || 'your_transient_job';
  return formatWorkflow({ name: 'my_workflow', description: '', cron: '', maxConcurrentRuns: 1, nodes: [
    { id: 'extract', job: j(0) }, { id: 'transform', job: j(1), dependsOn: ['extract'] },
    { id: 'load', job: j(2), dependsOn: ['transform'] }, { id: 'alert', job: j(0), dependsOn: ['extract', 'transform', 'load'], trigger: 'oneFailed' }] });
}

// where: the line and column of a character offset
function where(text, pos) {
  const before = text.slice(0, pos).split('\n');
  return { line: before.length, col: before[before.length - 1].length + 1 };
}

// offenders: the node ids a server message names: nodes[i] (by position
// in the JSON sent), the ids of a cycle's path, and quoted ids.
export function offenders(msg, nodes) {
  const ids = new Set(), all = new Set(nodes.map((n) => n && n.id).filter(Boolean));
  for (const m of msg.matchAll(/nodes\[(\d+)\]/g)) { const n = nodes[+m[1]]; if (n && n.id) ids.add(n.id); }
  const cyc = msg.match(/cycle: (.+)$/);
  if (cyc) for (const id of cyc[1].split(' → ')) if (all.has(id.trim())) ids.add(id.trim());
  for (const m of msg.matchAll(/'([^']+)'/g)) if (all.has(m[1])) ids.add(m[1]);
  return [...ids];
}

// marked: the message with nodes[i] and the offending ids as clickable marks
function marked(msg, ids, nodes, onPick) {
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`nodes\\[(\\d+)\\]|(?<![\\w.-])(${ids.map(esc).join('|') || '(?!)'})(?![\\w-]|\\.\\w)`, 'g');
  const out = [];
  let last = 0;
  for (const m of msg.matchAll(re)) {
    out.push(msg.slice(last, m.index));
    const id = m[1] !== undefined ? (nodes[+m[1]] || {}).id : m[2];
    out.push(id ? h('mark.node-ref', { 'data-node-ref': id, title: t('wf.findInJson'), onclick: () => onPick(id) }, m[1] !== undefined ? `${m[0]} (${id})` : m[0]) : m[0]);
    last = m.index + m[0].length;
  }
  out.push(msg.slice(last));
  return out;
}

export default async function wfedit(el, ctx, name) {
  const editing = !!name;
  const [wf, jobs] = await Promise.all([editing ? get(`/workflow/${enc(name)}`) : null, get('/job/jobs').catch(() => [])]);
  const transient = (jobs || []).filter((j) => j.jobExecutionType !== 'DAEMON').map((j) => j.jobName).sort(byName);
  let text;
  if (wf) {
    const cfg = { ...wf };
    for (const k of VIEW_FIELDS) delete cfg[k];
    cfg.nodes = cfg.nodes.map((n) => { const c = { ...n }; if (c.trigger === 'allSucceeded') delete c.trigger; return c; });
    text = formatWorkflow(cfg);
  } else text = starter(transient);
  const ta = h('textarea.mono.wf-json#wf-json', { spellcheck: 'false', autocomplete: 'off', rows: 24, 'aria-label': t('wf.json') }, text);
  const errBox = h('div', { id: 'wf-error-box', 'aria-live': 'polite' });
  const submit = h('button.btn.primary', { type: 'submit', id: 'wf-submit', 'data-write': '' }, editing ? t('save') : t('wf.register'));
  const preview = h('div.panel.dag-panel', { id: 'wf-preview' });
  const jobsHelp = h('div.panel.wf-help', h('h3', t('wf.jobsYouCanUse')), transient.length
    ? h('div.chips', transient.slice(0, 60).map((j) => h('button.chip', { type: 'button', title: t('wf.insert'), onclick: () => insert(JSON.stringify(j)) }, j)), transient.length > 60 ? h('span.muted', ` … (${transient.length})`) : null)
    : h('p.muted', h('a', { href: '#/jobs/new' }, t('wf.noTransientJobs'))),
  h('h3', t('wf.trigger')), h('dl.kv.rules', ['allSucceeded', 'allFailed', 'allDone', 'oneSucceeded', 'oneFailed'].map((r) => [h('dt', h('code', r)), h('dd', t('wf.rule.' + r))])),
  h('p.muted', t('wf.fieldsHelp')));
  const form = h('form.wf-edit', { novalidate: true },
    h('div.wf-editor', canWrite() ? null : h('div.banner', t('readOnly')), errBox, ta, h('div.formbar', { style: { paddingLeft: 0 } }, canWrite() ? submit : null,
      btn(t('wf.format'), () => format(), '', { id: 'wf-format' }), btn(t('cancel'), () => history.back()), h('span.muted', t('wf.ctrlEnter')))),
    h('div.wf-side', h('h3', { style: { marginTop: 0 } }, t('wf.preview')), preview, jobsHelp));
  el.append(h('h1', h('a', { href: '#/workflows' }, t('wf.title')), ' / ', editing ? t('wf.modifyTitle', { name }) : t('wf.register')), form);

  let graph = null, sig = '', lastNodes = [];
  function parse() {
    try { return { value: JSON.parse(ta.value) }; } catch (e) {
      const m = String(e.message).match(/position (\d+)/);
      const pos = m ? +m[1] : ta.value.length;
      return { error: e.message.replace(/^JSON\.parse: /, ''), pos };
    }
  }
  function drawPreview() {
    const p = parse();
    if (p.error || !p.value || !Array.isArray(p.value.nodes)) {
      if (!graph) clear(preview, h('div.muted', t('wf.previewNone')));
      preview.classList.add('stale');
      return p;
    }
    preview.classList.remove('stale');
    const seen = new Set();
    const nodes = p.value.nodes.filter((n) => n && typeof n.id === 'string' && n.id && !seen.has(n.id) && seen.add(n.id))
      .map((n) => ({ id: n.id, job: String(n.job ?? ''), dependsOn: Array.isArray(n.dependsOn) ? n.dependsOn.map(String) : [], trigger: typeof n.trigger === 'string' ? n.trigger : '' }));
    lastNodes = p.value.nodes;
    const s = JSON.stringify(nodes);
    if (s !== sig) { sig = s; clear(preview); graph = nodes.length ? drawGraph(preview, nodes, { id: 'wf-preview-dag', onSelect: pick, hint: t('wf.previewHint'), legend: false }) : null; }
    return p;
  }
  function showError(msg, ids, extra) {
    clear(errBox, h('div.alert.bad.wf-error', { id: 'wf-error', role: 'alert' }, h('strong', t('wf.rejected')), ' ', marked(msg, ids, lastNodes, pick), extra || null));
    if (graph) graph.mark(ids);
  }
  // pick: select a node's "id": "…" in the JSON and show it in the preview
  function pick(id) {
    const m = new RegExp(`"id"\\s*:\\s*${JSON.stringify(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`).exec(ta.value);
    if (m) select(m.index, m.index + m[0].length);
    if (graph) graph.reveal(id);
  }
  function select(from, to) {
    ta.focus();
    ta.setSelectionRange(from, to);
    const { line } = where(ta.value, from);
    const lh = parseFloat(getComputedStyle(ta).lineHeight) || 18;
    ta.scrollTop = Math.max(0, (line - 3) * lh);
  }
  function insert(s) {
    const a = ta.selectionStart, b = ta.selectionEnd;
    ta.setRangeText(s, a, b, 'end');
    ta.focus();
    drawPreviewSoon();
  }
  function format() {
    const p = parse();
    if (p.error) { jsonError(p); return; }
    ta.value = formatWorkflow(p.value);
    drawPreview();
  }
  function jsonError(p) {
    const { line, col } = where(ta.value, p.pos);
    showError(t('wf.badJson', { msg: p.error, line, col }), []);
    select(p.pos, Math.min(ta.value.length, p.pos + 1));
  }
  const drawPreviewSoon = debounce(drawPreview, 250);
  ta.addEventListener('input', drawPreviewSoon);
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Tab' && !e.shiftKey) { e.preventDefault(); insert('  '); }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errBox);
    if (graph) graph.mark([]);
    const p = drawPreview();
    if (p.error) { jsonError(p); return; }
    if (editing && p.value && p.value.name !== name) { showError(t('wf.nameFixed', { name }), []); return; }
    try {
      const saved = await busy(submit, () => api(editing ? 'PUT' : 'POST', '/workflow', { body: ta.value }));
      toast(t(editing ? 'wf.saved' : 'wf.registered', { name: saved.name }), 'ok');
      ctx.go(`/workflows/${enc(saved.name)}`);
    } catch (err) {
      if (err instanceof ApiError && (err.status === 400 || err.status === 409 || err.status === 404)) {
        const ids = offenders(err.message, lastNodes);
        showError(err.message, ids);
        if (ids.length) pick(ids[0]);
      } else showError(errText(err), []);
    }
  });
  drawPreview();
  ta.focus();
}
