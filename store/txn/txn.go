// Package txn batches the commits of a piece of work into one: a Txn is a
// store.KV over a base store that keeps the ops of its Commits in memory,
// answers reads as if they had been applied, and writes them all to the
// base in a single atomic Commit at Flush.
//
// The scheduler handles a burst of status updates this way: each update
// reads and writes through the Txn as it would through the store (read-
// modify-write included), and the whole burst costs one commit (one fsync
// on SQLite, one multi on ZooKeeper) instead of one per update.
//
// A Commit is checked against the Txn's view (base state plus the earlier
// Commits) with the store's rules and fails, changing nothing, where the
// store would fail; the base checks everything again, atomically, at
// Flush, so a write that raced with the batch fails the whole Flush.
// Watch is not supported.
package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ejcloud/elasticjob/store"
)

var _ store.KV = (*Txn)(nil)

// ErrNoWatch: a Txn does not watch.
var ErrNoWatch = errors.New("txn: watch is not supported")

// Txn is a batch of commits over a base store. It is not safe for
// concurrent use.
type Txn struct {
	base    store.KV
	ops     []store.Op
	nodes   map[string]node // path → its state in the batch
	parents map[string]bool // ancestors of paths in nodes (a delete elsewhere has nothing of the batch to forget)
	cleared []string        // subtrees deleted in the batch: base nodes under them are gone
	read    map[string]node // base nodes read so far (the batch reads each once)
	trusted map[string]bool // paths whose existence checks need no read (Trust)
	cuts    []int           // ends of the parts FlushChain commits (Cut), as counts of ops
}

// node is a path's state in the batch.
type node struct {
	exists  bool
	value   []byte
	version int64
}

// New starts an empty batch over base.
func New(base store.KV) *Txn {
	return &Txn{base: base, nodes: map[string]node{}, parents: map[string]bool{}, read: map[string]node{}}
}

// Trust makes the batch's own checks take paths as existing without
// reading them, as long as the batch does not write them: for the fence of
// every commit (the leader's election node), which the base may not cache
// (a round trip per batch on ZooKeeper). A check of a trusted path passes
// whatever version it names (an etcd term's fence names its node's
// version); Flush's commit checks them in the base as always, so a lost
// fence still fails the whole batch there.
func (t *Txn) Trust(paths ...string) {
	if t.trusted == nil {
		t.trusted = map[string]bool{}
	}
	for _, p := range paths {
		t.trusted[p] = true
	}
}

// Len is the number of ops the batch holds.
func (t *Txn) Len() int { return len(t.ops) }

// Flush commits the batch to the base in one commit (a Check repeated with
// the same path and version is sent once) and empties it.
func (t *Txn) Flush(ctx context.Context) error {
	ops := dedupChecks(t.ops)
	t.reset()
	if len(ops) == 0 {
		return nil
	}
	return t.base.Commit(ctx, ops...)
}

// Cut ends a part of the batch: FlushChain commits each part as one
// batch of a chain. A part is what the Commits since the last Cut added
// (maybe nothing).
func (t *Txn) Cut() { t.cuts = append(t.cuts, len(t.ops)) }

// FlushChain commits the batch's parts (Cut; what follows the last Cut
// is one more part, if anything does) as a chain in the base
// (store.CommitChain: in order, each atomically, each only if every part
// before it was applied; pipelined on ZooKeeper) over the chain node, and
// empties the batch. It returns how many parts were applied, the empty
// ones included.
func (t *Txn) FlushChain(ctx context.Context, chain string) (applied int, err error) {
	if len(t.cuts) == 0 || t.cuts[len(t.cuts)-1] != len(t.ops) {
		t.cuts = append(t.cuts, len(t.ops))
	}
	parts := make([][]store.Op, 0, len(t.cuts))
	from := 0
	for _, to := range t.cuts {
		parts = append(parts, dedupChecks(t.ops[from:to]))
		from = to
	}
	n := len(t.ops)
	t.reset()
	if n == 0 {
		return len(parts), nil
	}
	applied, _, err = store.CommitChain(ctx, t.base, nil, chain, parts)
	return applied, err
}

// dedupChecks drops a Check repeated with the same path and version.
func dedupChecks(in []store.Op) []store.Op {
	type check struct {
		path    string
		version int64
	}
	ops := make([]store.Op, 0, len(in))
	seen := map[check]bool{}
	for _, op := range in {
		if op.Kind == store.OpCheck {
			key := check{op.Path, op.Version}
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		ops = append(ops, op)
	}
	return ops
}

func (t *Txn) reset() {
	t.ops, t.nodes, t.parents, t.cleared, t.read, t.cuts = nil, map[string]node{}, map[string]bool{}, nil, map[string]node{}, nil
}

// view returns p's state in the batch: from the batch if it wrote p, else
// from the base (a node under a subtree the batch deleted is gone).
func (t *Txn) view(ctx context.Context, p string) (node, error) {
	if n, ok := t.nodes[p]; ok {
		return n, nil
	}
	if p == "/" {
		return node{exists: true}, nil
	}
	if t.underCleared(p) {
		return node{}, nil
	}
	if n, ok := t.read[p]; ok {
		return n, nil
	}
	n, err := t.base.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		t.read[p] = node{}
		return node{}, nil
	}
	if err != nil {
		return node{}, err
	}
	t.read[p] = node{exists: true, value: n.Value, version: n.Version}
	return t.read[p], nil
}

func (t *Txn) underCleared(p string) bool {
	for _, c := range t.cleared {
		if store.Under(p, c) {
			return true
		}
	}
	return false
}

// Get returns the node at path as the batch sees it.
func (t *Txn) Get(ctx context.Context, path string) (store.Node, error) {
	if err := store.ValidatePath(path); err != nil {
		return store.Node{}, fmt.Errorf("txn get: %w", err)
	}
	n, err := t.view(ctx, path)
	if err != nil {
		return store.Node{}, err
	}
	if !n.exists {
		return store.Node{}, fmt.Errorf("txn get %s: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: path, Value: n.value, Version: n.version}, nil
}

// Children returns the sorted names of path's children as the batch sees them.
func (t *Txn) Children(ctx context.Context, path string) ([]string, error) {
	if err := store.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("txn children: %w", err)
	}
	set := map[string]bool{}
	if !t.underCleared(path) {
		base, err := t.base.Children(ctx, path)
		if err != nil {
			return nil, err
		}
		for _, name := range base {
			if !t.underCleared(store.Join(path, name)) {
				set[name] = true
			}
		}
	}
	for p, n := range t.nodes {
		if p != "/" && store.Parent(p) == path {
			set[store.Base(p)] = n.exists
		}
	}
	var out []string
	for name, there := range set {
		if there {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// List returns path's children with their values, as the batch sees them.
func (t *Txn) List(ctx context.Context, path string) ([]store.Node, error) {
	names, err := t.Children(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]store.Node, 0, len(names))
	for _, name := range names {
		n, err := t.Get(ctx, store.Join(path, name))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// Watch is not supported.
func (t *Txn) Watch(context.Context, string) (<-chan store.Event, error) { return nil, ErrNoWatch }

// Close discards the batch; the base stays open.
func (t *Txn) Close() error {
	t.reset()
	return nil
}
