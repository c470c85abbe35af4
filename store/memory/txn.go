package memory

import (
	"slices"

	"github.com/ejcloud/elasticjob/store"
)

// txn applies one Commit's ops to the store in place, remembering the
// previous state of every touched path so that rollback can restore it.
type txn struct {
	s      *Store
	saved  map[string]*node // nil: the path was absent
	events []store.Event
}

func (t *txn) apply(op store.Op) error {
	cur, exists := t.s.nodes[op.Path]
	if op.Path == "/" {
		exists = true
	}
	switch op.Kind {
	case store.OpCreate:
		if exists {
			return OpError(op, store.ErrExists)
		}
		t.ensureAncestors(op.Path)
		t.write(op.Path, op.Value, 0)
	case store.OpPut:
		t.ensureAncestors(op.Path)
		if exists {
			t.write(op.Path, op.Value, cur.version+1)
		} else {
			t.write(op.Path, op.Value, 0)
		}
	case store.OpSet:
		if err := match(op, cur, exists); err != nil {
			return err
		}
		t.write(op.Path, op.Value, cur.version+1)
	case store.OpDelete:
		if !exists && op.Version == store.AnyVersion {
			return nil
		}
		if err := match(op, cur, exists); err != nil {
			return err
		}
		t.deleteTree(op.Path)
	case store.OpCheck:
		return match(op, cur, exists)
	}
	return nil
}

// match checks existence and the expected version of op against the node.
func match(op store.Op, cur node, exists bool) error {
	if !exists {
		return OpError(op, store.ErrNotFound)
	}
	if op.Version != store.AnyVersion && op.Version != cur.version {
		return OpError(op, store.ErrConflict)
	}
	return nil
}

// ensureAncestors creates the missing ancestors of p, top down.
func (t *txn) ensureAncestors(p string) {
	var missing []string
	for a := store.Parent(p); a != "/"; a = store.Parent(a) {
		if _, ok := t.s.nodes[a]; ok {
			break
		}
		missing = append(missing, a)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		t.write(missing[i], nil, 0)
	}
}

func (t *txn) write(p string, value []byte, version int64) {
	t.save(p)
	v := clone(value)
	t.s.setNode(p, node{value: v, version: version})
	t.events = append(t.events, store.Event{Type: store.EventPut, Path: p, Version: version, Value: v})
}

// deleteTree removes p and its descendants, descendants first (in
// descending path order, which puts every node before its ancestors).
func (t *txn) deleteTree(p string) {
	var desc []string
	var walk func(string)
	walk = func(dir string) {
		for name := range t.s.kids[dir] {
			c := store.Join(dir, name)
			desc = append(desc, c)
			walk(c)
		}
	}
	walk(p)
	slices.Sort(desc)
	slices.Reverse(desc)
	for _, d := range append(desc, p) {
		n := t.s.nodes[d]
		t.save(d)
		t.s.removeNode(d)
		t.events = append(t.events, store.Event{Type: store.EventDelete, Path: d, Version: n.version})
	}
}

func (t *txn) save(p string) {
	if _, ok := t.saved[p]; ok {
		return
	}
	if n, ok := t.s.nodes[p]; ok {
		t.saved[p] = &n
		return
	}
	t.saved[p] = nil
}

func (t *txn) rollback() {
	for p, prev := range t.saved {
		if prev == nil {
			t.s.removeNode(p)
		} else {
			t.s.setNode(p, *prev)
		}
	}
	t.events = nil
}
