// The console's DAG layout (web/dist/js/dag.js, no DOM) under node: layers
// by the longest path, crossings removed where an order without them
// exists, boxes and labels apart, cycles broken, and how long 50 and 500
// nodes take (printed, not asserted).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layout } from '../../web/dist/js/dag.js';

const overlap = (p, q) => p.x < q.x + q.w && q.x < p.x + p.w && p.y < q.y + q.h && q.y < p.y + p.h;

// random DAG: node i depends on up to three earlier nodes
function randomDAG(n, seed) {
  const rnd = (k) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor((seed / 2147483648) * k); };
  return Array.from({ length: n }, (_, i) => ({
    id: 'n' + i,
    dependsOn: i < 3 ? [] : [...new Set(Array.from({ length: 1 + rnd(3) }, () => 'n' + rnd(i)))],
    label: rnd(5) === 0 && i >= 3 ? 'oneFailed' : '',
  }));
}

test('layers are the longest path from the roots', () => {
  const l = layout([{ id: 'a' }, { id: 'b', dependsOn: ['a'] }, { id: 'c', dependsOn: ['b'] }, { id: 'd', dependsOn: ['a', 'c'] }, { id: 'e' }]);
  assert.deepEqual(['a', 'b', 'c', 'd', 'e'].map((id) => l.nodes.get(id).layer), [0, 1, 2, 3, 0]);
  assert.equal(l.layers, 4);
  assert.equal(l.edges.length, 4);
  // LR: a later layer is to the right, with room between
  assert.ok(l.nodes.get('b').x >= l.nodes.get('a').x + l.nodes.get('a').w + 50);
});

test('an order without crossings is found', () => {
  // two chains whose input order crosses them: a1→b2, a2→b1
  const l = layout([{ id: 'a1' }, { id: 'a2' }, { id: 'b1', dependsOn: ['a2'] }, { id: 'b2', dependsOn: ['a1'] },
    { id: 'c1', dependsOn: ['b1', 'b2'] }, { id: 'c2', dependsOn: ['b2'] }]);
  assert.equal(l.crossings, 0);
  const fan = [{ id: 'root' }, ...Array.from({ length: 50 }, (_, i) => ({ id: 'f' + i, dependsOn: ['root'] }))];
  fan.push({ id: 'sink', dependsOn: fan.slice(1).map((n) => n.id), label: 'oneFailed' });
  const f = layout(fan);
  assert.equal(f.crossings, 0);
  assert.equal(f.layers, 3);
});

test('boxes and labels never overlap, in both directions, and stay inside the drawing', () => {
  for (const [n, seed] of [[10, 1], [50, 2], [50, 3], [120, 4]]) {
    for (const dir of ['LR', 'TB']) {
      const l = layout(randomDAG(n, seed), { dir });
      const boxes = [...l.nodes.values()];
      for (const b of boxes) assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.w <= l.width && b.y + b.h <= l.height, `${n}/${dir}: a box outside`);
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) assert.ok(!overlap(boxes[i], boxes[j]), `${n}/${dir}: boxes overlap`);
      assert.ok(l.crossings <= l.crossingsInitial, `${n}/${dir}: ordering made it worse`);
      const labelled = l.edges.filter((e) => e.label);
      const lb = labelled.map((e) => ({ x: e.lx - (e.label.length * 6.4 + 10) / 2, y: e.ly - 9, w: e.label.length * 6.4 + 10, h: 18 }));
      if (dir === 'LR') for (let i = 0; i < lb.length; i++) for (let j = i + 1; j < lb.length; j++) assert.ok(!overlap(lb[i], lb[j]), `${n}: labels overlap`);
      for (const e of l.edges) assert.match(e.d, /^M[\d.-]+,[\d.-]+( [CL][\d., -]+)+$/);
    }
  }
});

test('a cycle (while editing) is drawn with its closing edge reversed', () => {
  const l = layout([{ id: 'a', dependsOn: ['c'] }, { id: 'b', dependsOn: ['a'] }, { id: 'c', dependsOn: ['b'] }]);
  assert.equal(l.reversed, 1);
  const back = l.edges.filter((e) => e.reversed);
  assert.equal(back.length, 1);
  assert.deepEqual(l.edges.map((e) => `${e.from}>${e.to}`).sort(), ['a>b', 'b>c', 'c>a']);
  // unknown and repeated dependencies are ignored
  assert.equal(layout([{ id: 'a', dependsOn: ['zz', 'a'] }, { id: 'b', dependsOn: ['a', 'a'] }]).edges.length, 1);
});

test('layout time (figures)', () => {
  for (const n of [50, 500]) {
    const g = randomDAG(n, 9);
    layout(g); // warm
    const t0 = performance.now();
    const l = layout(g);
    console.log(`layout of ${n} nodes, ${l.edges.length} edges: ${(performance.now() - t0).toFixed(1)} ms, crossings ${l.crossingsInitial} → ${l.crossings}, ${l.width}×${l.height}`);
  }
});
