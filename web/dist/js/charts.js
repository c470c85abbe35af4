// Small hand-written SVG charts.
import { h } from './ui.js';

const NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs = {}, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, v);
  for (const k of kids.flat()) if (k !== null && k !== undefined) el.append(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
  return el;
}
// scale(values, {unit, integer}) is the value axis: 0 to a round maximum
// in four steps, each tick with as many decimals as tell the steps apart
// (0.05 0.10 0.15 0.20, not 0.1 0.1 0.2 0.2), whole numbers for counts.
function scale(values, { integer = false } = {}) {
  const top = Math.max(0, ...values.map((v) => +v || 0));
  let raw = top > 0 ? top / 4 : integer ? 1 : 0.25;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = 10 * p;
  for (const m of [1, 2, 2.5, 5]) if (m * p >= raw - 1e-12) { step = m * p; break; }
  if (integer && step < 1) step = 1;
  if (integer && !Number.isInteger(step)) step = Math.ceil(step / 5) * 5 || 1;
  let digits = 0;
  while (digits < 6 && Math.abs(step * 10 ** digits - Math.round(step * 10 ** digits)) > 1e-9) digits++;
  return { max: step * 4, step, digits };
}
function tick(v, digits) {
  if (v === 0) return '0';
  if (v >= 10000 && digits === 0) return (v / 1000).toFixed(v % 1000 ? 1 : 0).replace(/\.0$/, '') + 'k';
  return v.toFixed(digits);
}
// textWidth over-estimates a label's width at the charts' 11 px (for clamping)
const textWidth = (str) => String(str).length * 6.8;
// frame draws the grid, the tick labels and the unit above them; returns
// the left edge of the plot
function frame(svg, sc, { W, H, T, B, R, unit }) {
  const labels = [0, 1, 2, 3, 4].map((i) => tick(sc.step * i, sc.digits));
  const L = Math.max(30, Math.ceil(Math.max(...labels.map(textWidth), textWidth(unit || '') - 10)) + 12);
  const ih = H - T - B;
  const grid = s('g', { class: 'grid' });
  labels.forEach((lab, i) => {
    const y = T + ih - (ih * i) / 4;
    grid.append(s('line', { x1: L, x2: W - R, y1: y, y2: y }), s('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, lab));
  });
  svg.append(grid);
  if (unit) svg.append(s('text', { class: 'unit', x: 2, y: 11, 'text-anchor': 'start' }, unit));
  return L;
}
// xLabel: a label centred under x, kept inside the drawing
function xLabel(x, y, lab, W) {
  const half = textWidth(lab) / 2;
  return s('text', { x: Math.min(Math.max(x, half + 2), W - half - 2), y, 'text-anchor': 'middle' }, lab);
}
const show = (v, unit, digits) => `${typeof v === 'number' ? +v.toFixed(Math.max(digits + 1, 2)) : v}${unit ? ' ' + unit : ''}`;

// stacked bars: labels[], series [{name, color, values[]}]; unit names the
// value axis ("tasks"), integer says the values are counts
export function bars(labels, series, { height = 200, title = '', unit = '', integer = false } = {}) {
  const W = 640, H = height, R = 10, T = 20, B = 28;
  const totals = labels.map((_, i) => series.reduce((a, se) => a + (+se.values[i] || 0), 0));
  const sc = scale(totals, { integer });
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title, 'data-unit': unit });
  const L = frame(svg, sc, { W, H, T, B, R, unit });
  const iw = W - L - R, ih = H - T - B;
  const bw = iw / Math.max(1, labels.length);
  const every = Math.ceil(labels.length / Math.max(1, Math.floor(iw / (textWidth(labels[0] || '') + 12))));
  labels.forEach((lab, i) => {
    let y = T + ih;
    const x = L + i * bw + bw * 0.15;
    for (const se of series) {
      const v = +se.values[i] || 0;
      if (!v) continue;
      const hh = (ih * v) / sc.max;
      y -= hh;
      svg.append(s('rect', { x, y, width: Math.max(1, bw * 0.7), height: hh, fill: se.color, rx: 1.5 }, s('title', {}, `${lab} · ${se.name}: ${show(v, unit, sc.digits)}`)));
    }
    if (i % every === 0) svg.append(xLabel(L + i * bw + bw / 2, H - 8, lab, W));
  });
  return h('div', svg, legend(series));
}

// lines: labels[], series [{name, color, values[]}]; unit and integer as for bars
export function lines(labels, series, { height = 200, title = '', unit = '', integer = false } = {}) {
  const W = 640, H = height, R = 10, T = 20, B = 28;
  const sc = scale(series.flatMap((se) => se.values), { integer });
  const max = sc.max;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title, 'data-unit': unit });
  const L = frame(svg, sc, { W, H, T, B, R, unit });
  const iw = W - L - R, ih = H - T - B;
  const n = Math.max(1, labels.length - 1);
  const every = Math.ceil(labels.length / Math.max(1, Math.floor(iw / (textWidth(labels[0] || '') + 12))));
  labels.forEach((lab, i) => { if (i % every === 0) svg.append(xLabel(L + (iw * i) / n, H - 8, lab, W)); });
  for (const se of series) {
    const pts = se.values.map((v, i) => `${L + (iw * i) / n},${T + ih - (ih * (+v || 0)) / max}`).join(' ');
    svg.append(s('polyline', { points: pts, fill: 'none', stroke: se.color, 'stroke-width': 2, 'stroke-linejoin': 'round' }));
    if (se.values.length <= 40) se.values.forEach((v, i) => svg.append(s('circle', { cx: L + (iw * i) / n, cy: T + ih - (ih * (+v || 0)) / max, r: 2.5, fill: se.color }, s('title', {}, `${labels[i]} · ${se.name}: ${show(v, unit, sc.digits)}`))));
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
