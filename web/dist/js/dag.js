// Layered layout of a DAG (no DOM): layers by the longest path from the
// roots, long edges split by dummy points, nodes ordered within layers by
// barycenter sweeps (the order with the fewest crossings wins), positions
// along a layer by isotonic regression towards the neighbours' mean, so
// edges run as straight as the spacing allows. Cycles (only while a
// definition is being edited) are broken by reversing back edges.

import { assemble } from './dagshape.js';

const DEFAULTS = { dir: 'LR', nodeW: 184, nodeH: 56, layerGap: 96, nodeGap: 18, dummy: 12, margin: 16, sweeps: 12 };

// layout(nodes, opts): nodes are [{id, dependsOn}] (unknown and repeated
// dependencies are ignored). Returns {width, height, dir, nodes: Map id →
// {x, y, w, h, layer}, edges: [{from, to, points, label, reversed}],
// crossings, crossingsInitial, layers}. x, y: a node box's top-left.
export function layout(input, opts = {}) {
  const o = { ...DEFAULTS, ...opts };
  const ids = input.map((n) => n.id);
  const index = new Map(ids.map((id, i) => [id, i]));
  const edges = [];
  const seen = new Set();
  input.forEach((n, v) => {
    for (const d of n.dependsOn || []) {
      const u = index.get(d);
      if (u === undefined || u === v || seen.has(u + ':' + v)) continue;
      seen.add(u + ':' + v);
      edges.push({ u, v, label: n.label || '' });
    }
  });
  const reversed = breakCycles(ids.length, edges);
  const layer = longestPath(ids.length, edges);
  const g = withDummies(ids.length, layer, edges);
  const initial = initialOrder(g);
  const crossingsInitial = totalCrossings(g, initial);
  const order = reduceCrossings(g, initial, crossingsInitial, o.sweeps);
  const pos = place(g, order, o);
  return assemble(ids, g, order, pos, reversed, o, crossingsInitial);
}

// breakCycles reverses the edges that close a cycle (DFS back edges) and
// returns how many it reversed.
function breakCycles(n, edges) {
  const out = Array.from({ length: n }, () => []);
  edges.forEach((e, i) => out[e.u].push(i));
  const mark = new Uint8Array(n); // 0 unseen, 1 on the path, 2 done
  let count = 0;
  for (let s = 0; s < n; s++) {
    if (mark[s]) continue;
    const stack = [[s, 0]];
    mark[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [u, k] = top;
      if (k >= out[u].length) { mark[u] = 2; stack.pop(); continue; }
      top[1]++;
      const e = edges[out[u][k]];
      if (mark[e.v] === 1) { [e.u, e.v] = [e.v, e.u]; e.reversed = true; count++; } else if (!mark[e.v]) { mark[e.v] = 1; stack.push([e.v, 0]); }
    }
  }
  return count;
}

// longestPath: a root is in layer 0, any other node one past its deepest
// upstream node (Kahn's order).
function longestPath(n, edges) {
  const indeg = new Array(n).fill(0);
  const out = Array.from({ length: n }, () => []);
  for (const e of edges) { indeg[e.v]++; out[e.u].push(e.v); }
  const layer = new Array(n).fill(0);
  const queue = [];
  for (let i = 0; i < n; i++) if (!indeg[i]) queue.push(i);
  for (let q = 0; q < queue.length; q++) {
    const u = queue[q];
    for (const v of out[u]) {
      layer[v] = Math.max(layer[v], layer[u] + 1);
      if (--indeg[v] === 0) queue.push(v);
    }
  }
  return layer;
}

// withDummies: every edge spanning k > 1 layers becomes a chain through
// k − 1 dummy vertices, so all edges join adjacent layers.
function withDummies(n, layer, edges) {
  const g = { n, layer: [...layer], dummy: new Array(n).fill(false), up: [], down: [], chains: [] };
  for (let i = 0; i < n; i++) { g.up.push([]); g.down.push([]); }
  const link = (a, b) => { g.down[a].push(b); g.up[b].push(a); };
  for (const e of edges) {
    const chain = [e.u];
    for (let l = layer[e.u] + 1; l < layer[e.v]; l++) {
      const d = g.layer.length;
      g.layer.push(l); g.dummy.push(true); g.up.push([]); g.down.push([]);
      chain.push(d);
    }
    chain.push(e.v);
    for (let i = 1; i < chain.length; i++) link(chain[i - 1], chain[i]);
    g.chains.push({ edge: e, chain });
  }
  g.layers = [];
  g.layer.forEach((l, v) => { (g.layers[l] ||= []).push(v); });
  return g;
}

// initialOrder: depth-first from the roots in input order, so a node's
// descendants start out near it.
function initialOrder(g) {
  const rank = new Array(g.layer.length).fill(-1);
  let next = 0;
  const visit = (s) => {
    const stack = [s];
    while (stack.length) {
      const v = stack.pop();
      if (rank[v] >= 0) continue;
      rank[v] = next++;
      for (let i = g.down[v].length - 1; i >= 0; i--) if (rank[g.down[v][i]] < 0) stack.push(g.down[v][i]);
    }
  };
  for (let v = 0; v < g.n; v++) if (!g.up[v].length) visit(v);
  for (let v = 0; v < g.layer.length; v++) visit(v);
  return g.layers.map((vs) => [...vs].sort((a, b) => rank[a] - rank[b]));
}

// crossings between layer l and l + 1: edges sorted by their upper end,
// then the inversions of their lower ends (Fenwick tree).
function crossingsBetween(g, upper, lower) {
  const posL = new Map(lower.map((v, i) => [v, i]));
  const pairs = [];
  upper.forEach((u, i) => { for (const w of g.down[u]) pairs.push([i, posL.get(w)]); });
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const tree = new Array(lower.length + 1).fill(0);
  let count = 0;
  pairs.forEach(([, p], k) => {
    let le = 0;
    for (let i = p + 1; i > 0; i -= i & -i) le += tree[i];
    count += k - le;
    for (let i = p + 1; i <= lower.length; i += i & -i) tree[i]++;
  });
  return count;
}

export function totalCrossings(g, order) {
  let c = 0;
  for (let l = 0; l + 1 < order.length; l++) c += crossingsBetween(g, order[l], order[l + 1]);
  return c;
}

// reduceCrossings: alternate down and up sweeps, each layer sorted by the
// mean position of its neighbours in the layer just swept (a vertex with
// none keeps its place); the best order seen is kept.
function reduceCrossings(g, initial, initialCount, sweeps) {
  let order = initial.map((l) => [...l]);
  let best = initial, bestCount = initialCount;
  for (let s = 0; s < sweeps && bestCount > 0; s++) {
    const down = s % 2 === 0;
    const ls = down ? [...order.keys()].slice(1) : [...order.keys()].reverse().slice(1);
    for (const l of ls) {
      const ref = order[down ? l - 1 : l + 1];
      const at = new Map(ref.map((v, i) => [v, i]));
      const key = new Map(order[l].map((v, i) => {
        const ns = (down ? g.up[v] : g.down[v]).filter((w) => at.has(w));
        return [v, ns.length ? ns.reduce((a, w) => a + at.get(w), 0) / ns.length : i * (ref.length / Math.max(1, order[l].length))];
      }));
      const cur = new Map(order[l].map((v, i) => [v, i]));
      order[l] = [...order[l]].sort((a, b) => key.get(a) - key.get(b) || cur.get(a) - cur.get(b));
    }
    transpose(g, order);
    const c = totalCrossings(g, order);
    if (c < bestCount) { best = order.map((l) => [...l]); bestCount = c; }
  }
  best.crossings = bestCount;
  return best;
}

// transpose swaps neighbours within a layer while that lowers the
// crossings with the layers on either side: for neighbours u, w the swap
// changes them by pairs(w, u) − pairs(u, w), where pairs(a, b) counts the
// neighbour pairs of a and b that cross with a placed before b.
function transpose(g, order) {
  const at = new Map();
  order.forEach((vs) => vs.forEach((v, i) => at.set(v, i)));
  const pairs = (a, b) => {
    let c = 0;
    for (const ns of [g.up, g.down]) for (const x of ns[a]) for (const y of ns[b]) if (at.get(x) > at.get(y)) c++;
    return c;
  };
  for (let pass = 0; pass < 8; pass++) {
    let improved = false;
    for (const vs of order) {
      for (let i = 0; i + 1 < vs.length; i++) {
        const u = vs[i], w = vs[i + 1];
        if (pairs(w, u) < pairs(u, w)) {
          vs[i] = w; vs[i + 1] = u; at.set(w, i); at.set(u, i + 1);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
}

// isotonic: positions p (centres) closest to want in the least-squares
// sense with p[i] − p[i−1] ≥ (size[i−1] + size[i]) / 2 + gap (pool
// adjacent violators on the offsets).
function isotonic(want, size, gap) {
  const off = [0];
  for (let i = 1; i < want.length; i++) off.push(off[i - 1] + (size[i - 1] + size[i]) / 2 + gap);
  const blocks = [];
  want.forEach((w, i) => {
    blocks.push({ sum: w - off[i], n: 1 });
    while (blocks.length > 1) {
      const b = blocks[blocks.length - 1], a = blocks[blocks.length - 2];
      if (a.sum / a.n <= b.sum / b.n) break;
      a.sum += b.sum; a.n += b.n; blocks.pop();
    }
  });
  const p = [];
  for (const b of blocks) for (let k = 0; k < b.n; k++) p.push(b.sum / b.n + off[p.length]);
  return p;
}

// place: centres along the layer axis, pulled towards the neighbours'
// mean in alternating passes.
function place(g, order, o) {
  const across = o.dir === 'TB' ? o.nodeW : o.nodeH;
  const size = (v) => (g.dummy[v] ? o.dummy : across);
  const pos = new Array(g.layer.length).fill(0);
  for (const l of order) {
    let at = 0;
    for (const v of l) { pos[v] = at + size(v) / 2; at += size(v) + o.nodeGap; }
  }
  const pass = (nbrs, layers) => {
    for (const l of layers) {
      const want = l.map((v) => { const ns = nbrs(v); return ns.length ? ns.reduce((a, w) => a + pos[w], 0) / ns.length : pos[v]; });
      isotonic(want, l.map(size), o.nodeGap).forEach((p, i) => { pos[l[i]] = p; });
    }
  };
  for (let it = 0; it < 4; it++) {
    pass((v) => g.up[v], order.slice(1));
    pass((v) => g.down[v], order.slice(0, -1).reverse());
  }
  pass((v) => [...g.up[v], ...g.down[v]], order);
  let min = Infinity;
  pos.forEach((p, v) => { min = Math.min(min, p - size(v) / 2); });
  return pos.map((p) => p - min + o.margin);
}
