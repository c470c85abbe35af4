// A workflow's DAG drawn in SVG (layout from dag.js): boxes coloured by
// the node's state in the selected run, curved edges with arrowheads,
// labelled with the downstream node's trigger rule when it is not the
// default; zoom (buttons, ctrl+wheel), drag to pan, fit, and a choice of
// left-to-right or top-to-bottom (automatic: whichever fits the width).
import { t } from './i18n.js';
import { h, btn } from './ui.js';
import { layout } from './dag.js';

const NS = 'http://www.w3.org/2000/svg';
export const NODE_STATES = ['PENDING', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];
const DEFAULT_RULE = 'allSucceeded';

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v);
  for (const k of kids.flat()) if (k !== undefined && k !== null && k !== false) el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return el;
}
// clip: text cut to about the width of a box (no measuring: ids and keys
// are mostly ASCII), with an ellipsis.
const clip = (text, px, charW) => { const n = Math.max(3, Math.floor(px / charW)); return text.length > n ? text.slice(0, n - 1) + '…' : text; };

// outputsText: "rows=42, file=a.csv" (sorted by key).
export function outputsText(out) {
  return Object.keys(out || {}).sort().map((k) => `${k}=${out[k]}`).join(', ');
}

// nodeLine: the third line of a box: the state and what best explains it.
function nodeLine(n) {
  if (!n) return '';
  const extra = n.state === 'SKIPPED' ? n.skipReason : n.state === 'FAILED' || n.state === 'CANCELLED' ? n.message
    : n.state === 'RUNNING' ? t('wf.tasksRunning', { n: (n.running || []).length }) : outputsText(n.outputs);
  return extra ? `${n.state} · ${extra}` : n.state;
}

function nodeTitle(def, n) {
  const lines = [def.id, `${t('wf.job')}: ${def.job}`];
  if (def.dependsOn && def.dependsOn.length) lines.push(`${t('wf.dependsOn')}: ${def.dependsOn.join(', ')}`, `${t('wf.trigger')}: ${def.trigger || DEFAULT_RULE} — ${t('wf.rule.' + (def.trigger || DEFAULT_RULE), null, '')}`);
  if (n) {
    lines.push(`${t('state')}: ${n.state} (${t('wf.ns.' + n.state, null, n.state)})`);
    if (n.skipReason) lines.push(`${t('wf.skipReason')}: ${n.skipReason}`);
    if (n.message) lines.push(`${t('h.message')}: ${n.message}`);
    const o = outputsText(n.outputs);
    if (o) lines.push(`${t('wf.outputs')}: ${o}`);
  }
  return lines.join('\n');
}

// drawGraph(host, defs, {onSelect}) → {setRun(nodes|null), select(id),
// mark(ids), svg}; defs are [{id, job, dependsOn, trigger}].
export function drawGraph(host, defs, opts = {}) {
  const st = { dir: opts.dir || null, zoom: 1, lay: null, run: null, selected: opts.selected || null, marked: new Set() };
  const wrap = h('div.dag-wrap', { id: opts.id || 'dag', tabindex: -1 });
  const pct = h('span.muted.zoom', { 'data-zoom': '' });
  const dirBtn = btn('', () => { st.dir = st.lay.dir === 'LR' ? 'TB' : 'LR'; relayout(); fitWidth(); }, 'sm', { id: 'dag-dir' });
  const bar = h('div.toolbar.dag-bar',
    btn('−', () => zoomBy(1 / 1.25), 'sm', { 'aria-label': t('wf.zoomOut'), id: 'dag-zoom-out' }),
    btn('+', () => zoomBy(1.25), 'sm', { 'aria-label': t('wf.zoomIn'), id: 'dag-zoom-in' }),
    btn(t('wf.fit'), () => fitAll(), 'sm', { id: 'dag-fit' }),
    btn('100%', () => setZoom(1), 'sm', { id: 'dag-100' }), pct, dirBtn,
    h('span.grow.muted', opts.hint ?? t('wf.graphHint')));
  const legend = h('div.legend.dag-legend', NODE_STATES.map((x) => h('span', h('i', { class: 'st-' + x }), x, ' ', h('span.muted', t('wf.ns.' + x)))));
  host.append(bar, wrap);
  if (opts.legend !== false) host.append(legend);
  let svg;

  function relayout() {
    const labelled = defs.map((d) => ({ id: d.id, dependsOn: d.dependsOn || [], label: d.trigger && d.trigger !== DEFAULT_RULE ? d.trigger : '' }));
    if (!st.dir) {
      // the orientation whose width fits best (then the shorter)
      const w = Math.max(320, wrap.clientWidth - 4);
      const a = layout(labelled, { dir: 'LR' }), b = layout(labelled, { dir: 'TB' });
      const fa = Math.min(1, w / a.width), fb = Math.min(1, w / b.width);
      st.lay = fa > fb || (fa === fb && a.height <= b.height) ? a : b;
    } else {
      st.lay = layout(labelled, { dir: st.dir });
    }
    dirBtn.textContent = st.lay.dir === 'LR' ? t('wf.dirTB') : t('wf.dirLR');
    render();
  }

  function render() {
    const L = st.lay;
    const byId = new Map(defs.map((d) => [d.id, d]));
    svg = s('svg', { class: 'dag', viewBox: `0 0 ${L.width} ${L.height}`, 'data-dir': L.dir, 'data-crossings': L.crossings,
      'data-crossings-initial': L.crossingsInitial, role: 'img', 'aria-label': t('wf.graph') },
    s('defs', {}, s('marker', { id: 'dag-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow' }))),
    s('g', { class: 'edges' }, L.edges.map((e) => s('path', { class: 'edge' + (e.reversed ? ' back' : ''), d: e.d, 'data-from': e.from, 'data-to': e.to,
      [e.reversed ? 'marker-start' : 'marker-end']: 'url(#dag-arrow)' }))),
    s('g', { class: 'elabels' }, L.edges.filter((e) => e.label).map((e) => {
      const w = e.label.length * 6.4 + 8;
      return s('g', { class: 'elabel', 'data-from': e.from, 'data-to': e.to, transform: `translate(${e.lx},${e.ly})` },
        s('title', {}, t('wf.rule.' + e.label, null, e.label)),
        s('rect', { x: -w / 2, y: -8, width: w, height: 16, rx: 4 }), s('text', { 'text-anchor': 'middle', y: 4 }, e.label));
    })),
    s('g', { class: 'nodes' }, [...L.nodes.entries()].map(([id, b]) => nodeEl(byId.get(id), b))));
    wrap.replaceChildren(svg);
    setZoom(st.zoom);
    paint();
  }

  function nodeEl(def, b) {
    const g = s('g', { class: 'dnode', 'data-node': def.id, transform: `translate(${b.x},${b.y})`, tabindex: 0, role: 'button' },
      s('title', {}), s('rect', { class: 'box', width: b.w, height: b.h, rx: 7 }), s('rect', { class: 'stripe', width: 5, height: b.h - 2, x: 1, y: 1, rx: 2 }),
      s('text', { class: 'nid', x: 13, y: 18 }, clip(def.id, b.w - 22, 7.6)),
      s('text', { class: 'njob', x: 13, y: 33 }, clip(def.job || '', b.w - 22, 6.6)),
      s('text', { class: 'nst', x: 13, y: 48 }));
    g.addEventListener('click', () => opts.onSelect && opts.onSelect(def.id));
    g.addEventListener('keydown', (e) => { if ((e.key === 'Enter' || e.key === ' ') && opts.onSelect) { e.preventDefault(); opts.onSelect(def.id); } });
    return g;
  }

  // paint: states, labels and tooltips from the run (no layout change)
  function paint() {
    if (!svg) return;
    const byId = new Map((st.run || []).map((n) => [n.id, n]));
    const defById = new Map(defs.map((d) => [d.id, d]));
    for (const g of svg.querySelectorAll('g.dnode')) {
      const id = g.getAttribute('data-node'), n = byId.get(id);
      g.setAttribute('data-state', n ? n.state : 'NONE');
      g.classList.toggle('sel', id === st.selected);
      g.classList.toggle('marked', st.marked.has(id));
      g.querySelector('title').textContent = nodeTitle(defById.get(id), n);
      g.querySelector('text.nst').textContent = clip(nodeLine(n), 164, 6.4);
      g.setAttribute('aria-label', `${id} ${n ? n.state : ''}`);
    }
    for (const p of svg.querySelectorAll('path.edge')) {
      const n = byId.get(p.getAttribute('data-from'));
      p.setAttribute('data-state', n ? n.state : 'NONE');
    }
  }

  function setZoom(z) {
    st.zoom = Math.min(2, Math.max(0.05, z));
    if (svg) { svg.style.width = `${st.lay.width * st.zoom}px`; svg.style.height = `${st.lay.height * st.zoom}px`; }
    pct.textContent = `${Math.round(st.zoom * 100)}%`;
  }
  function zoomBy(f, cx, cy) {
    const r = wrap.getBoundingClientRect();
    const px = cx ?? r.width / 2, py = cy ?? r.height / 2;
    const gx = (wrap.scrollLeft + px) / st.zoom, gy = (wrap.scrollTop + py) / st.zoom;
    setZoom(st.zoom * f);
    wrap.scrollLeft = gx * st.zoom - px;
    wrap.scrollTop = gy * st.zoom - py;
  }
  const fitAll = () => setZoom(Math.min(1, (wrap.clientWidth - 4) / st.lay.width, (maxHeight() - 4) / st.lay.height));
  // the width if that keeps text readable (≥ 80 %), else 80 % and scroll
  const fitWidth = () => setZoom(Math.min(1, Math.max(0.8, (wrap.clientWidth - 4) / st.lay.width)));
  const maxHeight = () => parseFloat(getComputedStyle(wrap).maxHeight) || 600;

  wrap.addEventListener('wheel', (e) => {
    if (!e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    const r = wrap.getBoundingClientRect();
    zoomBy(e.deltaY < 0 ? 1.1 : 1 / 1.1, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  wrap.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 || e.target.closest('g.dnode')) return;
    drag = { x: e.clientX, y: e.clientY, l: wrap.scrollLeft, t: wrap.scrollTop };
    wrap.setPointerCapture(e.pointerId);
    wrap.classList.add('grabbing');
  });
  wrap.addEventListener('pointermove', (e) => { if (drag) { wrap.scrollLeft = drag.l - (e.clientX - drag.x); wrap.scrollTop = drag.t - (e.clientY - drag.y); } });
  const end = () => { drag = null; wrap.classList.remove('grabbing'); };
  wrap.addEventListener('pointerup', end);
  wrap.addEventListener('pointercancel', end);

  relayout();
  fitWidth();
  return {
    get svg() { return svg; },
    get layout() { return st.lay; },
    setRun(nodes) { st.run = nodes; paint(); },
    select(id) { st.selected = id; paint(); },
    mark(ids) { st.marked = new Set(ids || []); paint(); },
    reveal(id) {
      const b = st.lay.nodes.get(id);
      if (b) { wrap.scrollLeft = (b.x + b.w / 2) * st.zoom - wrap.clientWidth / 2; wrap.scrollTop = (b.y + b.h / 2) * st.zoom - wrap.clientHeight / 2; }
    },
  };
}
