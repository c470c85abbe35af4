package etcd

import (
	"fmt"
	"slices"

	"github.com/ejcloud/elasticjob/store"
)

// ent is a node's state as a commit's earlier ops left it.
type ent struct {
	exists  bool
	version int64
	value   []byte
}

type actKind int

const (
	actPut     actKind = iota // write the node (its state at the end of the batch)
	actDel                    // delete the node's own key
	actSubtree                // delete every node below it, deepest level first
)

type act struct {
	kind actKind
	path string
}

// plan applies a commit's ops, in order, to the snapshot: it finds the
// first failing op exactly as store/memory does, and records what the
// commit writes.
type plan struct {
	sn   *snapshot
	cur  map[string]ent // nodes the batch wrote or deleted
	cut  []string       // nodes deleted with their subtrees by the batch
	acts []act
}

func newPlan(sn *snapshot) *plan { return &plan{sn: sn, cur: map[string]ent{}} }

func (p *plan) state(path string) ent {
	if path == "/" {
		return ent{exists: true}
	}
	if e, ok := p.cur[path]; ok {
		return e
	}
	for _, c := range p.cut {
		if store.Under(path, c) {
			return ent{}
		}
	}
	n := p.sn.nodes[path]
	return ent{exists: n.exists, version: n.version, value: n.value}
}

func opErr(op store.Op, err error) error {
	return fmt.Errorf("etcd store %s %s: %w", op.Kind, op.Path, err)
}

func (p *plan) apply(op store.Op) error {
	cur := p.state(op.Path)
	switch op.Kind {
	case store.OpCreate:
		if cur.exists {
			return opErr(op, store.ErrExists)
		}
		p.ancestors(op.Path)
		p.write(op.Path, op.Value, 0)
	case store.OpPut:
		p.ancestors(op.Path)
		if cur.exists {
			p.write(op.Path, op.Value, cur.version+1)
		} else {
			p.write(op.Path, op.Value, 0)
		}
	case store.OpSet:
		if err := match(op, cur); err != nil {
			return err
		}
		p.write(op.Path, op.Value, cur.version+1)
	case store.OpDelete:
		if !cur.exists && op.Version == store.AnyVersion {
			return nil
		}
		if err := match(op, cur); err != nil {
			return err
		}
		p.remove(op.Path)
	case store.OpCheck:
		return match(op, cur)
	}
	return nil
}

func match(op store.Op, cur ent) error {
	if !cur.exists {
		return opErr(op, store.ErrNotFound)
	}
	if op.Version != store.AnyVersion && op.Version != cur.version {
		return opErr(op, store.ErrConflict)
	}
	return nil
}

// ancestors creates p's missing ancestors, top down.
func (p *plan) ancestors(path string) {
	var missing []string
	for a := store.Parent(path); a != "/"; a = store.Parent(a) {
		if p.state(a).exists {
			break
		}
		missing = append(missing, a)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p.write(missing[i], nil, 0)
	}
}

func (p *plan) write(path string, value []byte, version int64) {
	p.cur[path] = ent{exists: true, version: version, value: slices.Clone(value)}
	p.acts = append(p.acts, act{actPut, path})
}

func (p *plan) remove(path string) {
	for q := range p.cur {
		if store.Under(q, path) {
			p.cur[q] = ent{}
		}
	}
	p.cur[path] = ent{}
	p.cut = append(p.cut, path)
	p.acts = append(p.acts, act{actSubtree, path}, act{actDel, path})
}

// write is one etcd request of a commit: a put of a node's key, or a
// delete of a key or of the range [key, end).
type write struct {
	put   bool
	key   string
	end   string // a range delete when set
	value string
}

func (w write) size() int { return len(w.key) + len(w.end) + len(w.value) + 16 }

// writes turns the plan into etcd requests, in the order of the ops that
// made them: each node the batch leaves present is put once (with its
// final version and value), each node it leaves absent that the snapshot
// held is deleted, and each deleted subtree is deleted level by level,
// the deepest first, so that watchers see every node's delete after its
// descendants'. A subtree's ranges leave out the keys the batch puts
// (etcd refuses a transaction that puts a key inside a range it deletes).
func (p *plan) writes(k keys) []write {
	var puts []string // keys the batch puts, sorted
	for path, e := range p.cur {
		if e.exists {
			puts = append(puts, k.node(path))
		}
	}
	slices.Sort(puts)
	var out []write
	done := map[string]bool{}
	subtrees := map[string]bool{}
	for _, a := range p.acts {
		e := p.cur[a.path]
		switch a.kind {
		case actPut:
			if e.exists && !done[a.path] {
				done[a.path] = true
				out = append(out, write{put: true, key: k.node(a.path), value: encode(e.version, e.value)})
			}
		case actDel:
			if !e.exists && !done[a.path] && p.sn.nodes[a.path].exists {
				done[a.path] = true
				out = append(out, write{key: k.node(a.path)})
			}
		case actSubtree:
			if subtrees[a.path] {
				continue
			}
			subtrees[a.path] = true
			levels := p.sn.levels[a.path]
			for i := len(levels) - 1; i >= 0; i-- {
				pre := k.level(a.path, levels[i])
				out = append(out, holes(pre, prefixEnd(pre), puts)...)
			}
		}
	}
	return out
}

// holes is the delete of [start, end) less the keys in puts (sorted).
func holes(start, end string, puts []string) []write {
	var out []write
	i, _ := slices.BinarySearch(puts, start)
	for ; i < len(puts) && puts[i] < end; i++ {
		if start < puts[i] {
			out = append(out, write{key: start, end: puts[i]})
		}
		start = puts[i] + "\x00"
	}
	if start < end {
		out = append(out, write{key: start, end: end})
	}
	return out
}

// events are the commit's changes as its watchers get them: each node the
// batch wrote or deleted once, in the order of its first act, in its
// final state, at rev (CommitReport).
func (p *plan) events(rev int64) []store.Event {
	out := make([]store.Event, 0, len(p.cur))
	seen := make(map[string]bool, len(p.cur))
	for _, a := range p.acts {
		if a.kind == actSubtree || seen[a.path] {
			continue
		}
		seen[a.path] = true
		e := p.cur[a.path]
		if !e.exists {
			out = append(out, store.Event{Type: store.EventDelete, Path: a.path, Revision: rev})
			continue
		}
		out = append(out, store.Event{Type: store.EventPut, Path: a.path, Version: e.version, HasValue: true, Value: e.value, Revision: rev})
	}
	return out
}
