// Geometry of a laid-out DAG (no DOM): boxes from the layers and positions
// dag.js computed, each edge's SVG path, edge ports spread along a box's
// side, and trigger-rule labels placed where they hide no other label.

// assemble: boxes, and each edge's path: a cubic between layers (level
// tangents), straight through a dummy's layer; edges meeting a node are
// spread along its side in the order of their other ends.
export function assemble(ids, g, order, pos, reversed, o, crossingsInitial) {
  const lr = o.dir !== 'TB';
  const main = lr ? o.nodeW : o.nodeH, across = lr ? o.nodeH : o.nodeW;
  const start = (l) => o.margin + l * (main + o.layerGap);
  const P = (r, a) => (lr ? [r, a] : [a, r]);
  const nodes = new Map();
  ids.forEach((id, v) => {
    const [x, y] = P(start(g.layer[v]), pos[v] - across / 2);
    nodes.set(id, { x, y, w: o.nodeW, h: o.nodeH, layer: g.layer[v] });
  });
  const ports = spreadPorts(g, pos, across);
  const edges = g.chains.map(({ edge, chain }, k) => {
    const pts = [[start(g.layer[chain[0]]) + main, pos[chain[0]] + ports.out.get(k)]];
    for (const d of chain.slice(1, -1)) pts.push([start(g.layer[d]), pos[d]], [start(g.layer[d]) + main, pos[d]]);
    const last = chain[chain.length - 1];
    pts.push([start(g.layer[last]), pos[last] + ports.in.get(k)]);
    let d = `M${P(...pts[0]).join(',')}`;
    for (let i = 1; i < pts.length; i++) {
      const [r0, a0] = pts[i - 1], [r1, a1] = pts[i];
      if (i % 2 === 0) { d += ` L${P(r1, a1).join(',')}`; continue; } // through a dummy's layer
      const m = (r1 - r0) / 2;
      d += ` C${P(r0 + m, a0).join(',')} ${P(r1 - m, a1).join(',')} ${P(r1, a1).join(',')}`;
    }
    const [u, v] = edge.reversed ? [edge.v, edge.u] : [edge.u, edge.v];
    return { from: ids[u], to: ids[v], d, label: edge.label, reversed: !!edge.reversed, last: [pts[pts.length - 2], pts[pts.length - 1]] };
  });
  placeLabels(edges, P);
  const layers = order.length;
  let extent = 0;
  pos.forEach((p, v) => { extent = Math.max(extent, p + (g.dummy[v] ? o.dummy : across) / 2); });
  const [width, height] = P(2 * o.margin + layers * main + Math.max(0, layers - 1) * o.layerGap, extent + o.margin);
  return { width: Math.ceil(width), height: Math.ceil(height), dir: lr ? 'LR' : 'TB', nodes, edges, layers, reversed,
    crossings: order.crossings, crossingsInitial };
}

const round = (x) => Math.round(x * 10) / 10;

// placeLabels: each label on its edge's last curve (between the layers),
// at the middle or, if that hides another label, nearer one end; labels
// of edges into the same node that can only coincide are drawn once.
function placeLabels(edges, P) {
  const placed = [];
  const hits = (b) => placed.find((q) => b.x < q.x + q.w && q.x < b.x + b.w && b.y < q.y + q.h && q.y < b.y + b.h);
  for (const e of edges) {
    const [[r0, a0], [r1, a1]] = e.last;
    delete e.last;
    if (!e.label) continue;
    const w = e.label.length * 6.4 + 10, ht = 18;
    let best = null;
    for (const k of [0.5, 0.32, 0.68, 0.18, 0.82]) {
      const m = (r1 - r0) / 2;
      const c = (p0, p1, p2, p3) => (1 - k) ** 3 * p0 + 3 * (1 - k) ** 2 * k * p1 + 3 * (1 - k) * k * k * p2 + k ** 3 * p3;
      const [x, y] = P(c(r0, r0 + m, r1 - m, r1), c(a0, a0, a1, a1));
      const b = { x: x - w / 2, y: y - ht / 2, w, h: ht, lx: round(x), ly: round(y), to: e.to, label: e.label };
      const other = hits(b);
      if (!other) { best = b; break; }
      if (!best) best = { ...b, twin: other.to === e.to && other.label === e.label };
    }
    if (best.twin) { e.label = ''; e.shared = true; continue; } // the same rule of the same node, already shown there
    placed.push(best);
    e.lx = best.lx;
    e.ly = best.ly;
  }
}

// spreadPorts: per chain k, the offset of its start on its source's side
// (out) and of its end on its target's side (in).
function spreadPorts(g, pos, across) {
  const out = new Map(), inn = new Map();
  const byFrom = new Map(), byTo = new Map();
  g.chains.forEach(({ chain }, k) => {
    const a = chain[0], b = chain[chain.length - 1];
    (byFrom.get(a) || byFrom.set(a, []).get(a)).push([k, pos[chain[1]]]);
    (byTo.get(b) || byTo.set(b, []).get(b)).push([k, pos[chain[chain.length - 2]]]);
  });
  const spread = (groups, dst) => {
    for (const list of groups.values()) {
      list.sort((x, y) => x[1] - y[1]);
      const n = list.length;
      const step = n > 1 ? Math.min(10, (across - 16) / (n - 1)) : 0;
      list.forEach(([k], i) => dst.set(k, round((i - (n - 1) / 2) * step)));
    }
  };
  spread(byFrom, out);
  spread(byTo, inn);
  return { out, in: inn };
}
