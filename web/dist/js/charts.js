// Small hand-written SVG charts.
import { h } from './ui.js';

const NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs = {}, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, v);
  for (const k of kids.flat()) if (k !== null && k !== undefined) el.append(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
  return el;
}
function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// stacked bars: labels[], series [{name, color, values[]}]
export function bars(labels, series, { height = 200, title = '' } = {}) {
  const W = 640, H = height, L = 40, R = 10, T = 10, B = 28;
  const totals = labels.map((_, i) => series.reduce((a, se) => a + (+se.values[i] || 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const iw = W - L - R, ih = H - T - B;
  const bw = iw / Math.max(1, labels.length);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title });
  const grid = s('g', { class: 'grid' });
  for (let i = 0; i <= 4; i++) {
    const y = T + ih - (ih * i) / 4;
    grid.append(s('line', { x1: L, x2: W - R, y1: y, y2: y }), s('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, fmt((max * i) / 4)));
  }
  svg.append(grid);
  const every = Math.ceil(labels.length / 8);
  labels.forEach((lab, i) => {
    let y = T + ih;
    const x = L + i * bw + bw * 0.15;
    for (const se of series) {
      const v = +se.values[i] || 0;
      if (!v) continue;
      const hh = (ih * v) / max;
      y -= hh;
      svg.append(s('rect', { x, y, width: Math.max(1, bw * 0.7), height: hh, fill: se.color, rx: 1.5 }, s('title', {}, `${lab} · ${se.name}: ${v}`)));
    }
    if (i % every === 0) svg.append(s('text', { x: L + i * bw + bw / 2, y: H - 8, 'text-anchor': 'middle' }, lab));
  });
  return h('div', svg, legend(series));
}

// lines: labels[], series [{name, color, values[]}]
export function lines(labels, series, { height = 200, title = '' } = {}) {
  const W = 640, H = height, L = 40, R = 10, T = 10, B = 28;
  const max = niceMax(Math.max(0, ...series.flatMap((se) => se.values.map((v) => +v || 0))));
  const iw = W - L - R, ih = H - T - B;
  const n = Math.max(1, labels.length - 1);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title });
  const grid = s('g', { class: 'grid' });
  for (let i = 0; i <= 4; i++) {
    const y = T + ih - (ih * i) / 4;
    grid.append(s('line', { x1: L, x2: W - R, y1: y, y2: y }), s('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, fmt((max * i) / 4)));
  }
  svg.append(grid);
  const every = Math.ceil(labels.length / 8);
  labels.forEach((lab, i) => { if (i % every === 0) svg.append(s('text', { x: L + (iw * i) / n, y: H - 8, 'text-anchor': 'middle' }, lab)); });
  for (const se of series) {
    const pts = se.values.map((v, i) => `${L + (iw * i) / n},${T + ih - (ih * (+v || 0)) / max}`).join(' ');
    svg.append(s('polyline', { points: pts, fill: 'none', stroke: se.color, 'stroke-width': 2, 'stroke-linejoin': 'round' }));
    if (se.values.length <= 40) se.values.forEach((v, i) => svg.append(s('circle', { cx: L + (iw * i) / n, cy: T + ih - (ih * (+v || 0)) / max, r: 2.5, fill: se.color }, s('title', {}, `${labels[i]} · ${se.name}: ${v}`))));
  }
  return h('div', svg, legend(series));
}

// donut: [{name, color, value}]
export function donut(parts, { title = '', center = '' } = {}) {
  const total = parts.reduce((a, p) => a + (+p.value || 0), 0);
  const R = 60, C = 2 * Math.PI * R;
  const svg = s('svg', { viewBox: '0 0 160 160', class: 'chart', style: 'max-width:180px', role: 'img', 'aria-label': title });
  svg.append(s('circle', { cx: 80, cy: 80, r: R, fill: 'none', stroke: '#eaeef2', 'stroke-width': 22 }));
  let off = 0;
  for (const p of parts) {
    const v = +p.value || 0;
    if (!v || !total) continue;
    const len = (C * v) / total;
    svg.append(s('circle', { cx: 80, cy: 80, r: R, fill: 'none', stroke: p.color, 'stroke-width': 22, 'stroke-dasharray': `${len} ${C - len}`, 'stroke-dashoffset': -off, transform: 'rotate(-90 80 80)' }, s('title', {}, `${p.name}: ${v}`)));
    off += len;
  }
  svg.append(s('text', { x: 80, y: 86, 'text-anchor': 'middle', style: 'font-size:20px;fill:#1f2328;font-weight:600' }, center || String(total)));
  return h('div', { style: { display: 'flex', alignItems: 'center', gap: '18px' } }, svg, legend(parts.map((p) => ({ ...p, name: `${p.name}: ${p.value}` })), true));
}

function legend(series, column) {
  return h('div.legend', { style: column ? { flexDirection: 'column' } : null }, series.map((se) => h('span', h('i', { style: { background: se.color } }), se.name)));
}
function fmt(v) { return v >= 1000 ? (v / 1000).toFixed(v % 1000 ? 1 : 0) + 'k' : Number.isInteger(v) ? String(v) : v.toFixed(1); }
