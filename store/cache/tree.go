package cache

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/ejcloud/elasticjob/store"
)

// tree is the copy: the mirrored nodes, and what must change together
// with them under one lock, the roots' bookkeeping of what wrote into the
// copy (root.touched, and the revisions of revision.go).
//
// The nodes form a tree from top ("/"), each holding its children by
// name: a node costs its name (not its whole path), its value and one
// entry in its parent's set. A flat map of paths beside the children's
// names (as before) held every path twice over, about 270 bytes per job
// more at 100,000 jobs (BenchmarkCopyHeap). A lookup walks the path's
// names from the top.
type tree struct {
	mu     sync.RWMutex // guards top and its nodes, closed, and every root's touched, passed, fence, holds and holdq
	top    *node
	closed bool
	// flights, when set, is told of every write into the copy (wrote):
	// the commits in flight on a path written meanwhile re-read it.
	flights *flights
}

func newTree() *tree { return &tree{top: &node{}} }

// wroteLocked tells the commits in flight that p is about to be written
// into the copy by by (nil: not a commit), removed when gone (with its
// subtree, if it has one); t.mu is held.
func (t *tree) wroteLocked(p string, by *flight, gone bool) {
	if t.flights == nil {
		return
	}
	subtree := false
	if gone {
		n := t.lookupLocked(p)
		subtree = n != nil && n.kidCount() > 0
	}
	t.flights.wrote(p, by, subtree)
}

// node is one cached node; kids are its children (nil: none).
type node struct {
	value   string // the value's bytes (valueOf, bytesOf): 8 bytes less a node than a slice
	version int64
	kids    *kidSet
}

// valueOf keeps b as a node's value, without a copy: the copy already
// kept the slices it was given (a commit's values, a read's, an event's)
// and handed them to readers as they were, none of them to be modified.
func valueOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bytesOf is the value v as the slice it was given as.
func bytesOf(v string) []byte {
	if v == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(v), len(v))
}

// lookupLocked returns the node at p, or nil (also for a path that is
// not one, store.ValidatePath); t.mu is held.
func (t *tree) lookupLocked(p string) *node {
	n := t.top
	if p == "/" {
		return n
	}
	if p == "" || p[0] != '/' {
		return nil
	}
	for rest := p[1:]; n != nil; {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return n.kid(rest)
		}
		n, rest = n.kid(rest[:i]), rest[i+1:]
	}
	return nil
}

// isClosed reports whether close was called.
func (t *tree) isClosed() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.closed
}

// close marks the copy closed; it reports false if it was already.
func (t *tree) close() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.closed = true
	return true
}

// get returns the node at p.
func (t *tree) get(p string) (store.Node, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookupLocked(p)
	if n == nil {
		return store.Node{}, false
	}
	return store.Node{Path: p, Value: bytesOf(n.value), Version: n.version}, true
}

// children returns a copy of the sorted names of p's children.
func (t *tree) children(p string) []string {
	t.mu.Lock() // sortedKids may rebuild the order
	defer t.mu.Unlock()
	n := t.lookupLocked(p)
	if n == nil || n.kidCount() == 0 {
		return nil
	}
	return n.sortedKids()
}

// list returns p's children with their values, sorted by path.
func (t *tree) list(p string) []store.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.lookupLocked(p)
	if n == nil || n.kidCount() == 0 {
		return nil
	}
	out := make([]store.Node, 0, n.kidCount())
	n.kids.eachSorted(func(name string, k *node) {
		out = append(out, store.Node{Path: store.Join(p, name), Value: bytesOf(k.value), Version: k.version})
	})
	return out
}

// belief is whether the copy holds p and, with withChildren, the names of
// its children in no particular order (store.HintedReporter).
func (t *tree) belief(p string, withChildren bool) (exists bool, children []string) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookupLocked(p)
	if n == nil || !withChildren {
		return n != nil, nil
	}
	children = make([]string, 0, n.kidCount())
	n.eachKid(func(k string) { children = append(children, k) })
	return true, children
}

// presence records which paths the copy holds.
func (t *tree) presence(paths []string) map[string]bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = t.lookupLocked(p) != nil
	}
	return out
}

// wants says what the events of a successful commit of paths must show
// (see KV.awaitEvents): a put of at least the version the copy holds, or,
// for a path it no longer holds but held before, a delete.
func (t *tree) wants(paths []string, before map[string]bool) map[string]want {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := map[string]want{}
	for _, p := range paths {
		if n := t.lookupLocked(p); n != nil {
			out[p] = want{version: n.version}
		} else if before[p] {
			out[p] = want{del: true}
		}
	}
	return out
}

// currentLocked reports whether the copy reflects an event already: a put
// of a version it holds or passed (and no delete of it since the copy's
// last read), or a delete of a node it does not hold. t.mu is held.
func (t *tree) currentLocked(ev store.Event, deleted bool) bool {
	n := t.lookupLocked(ev.Path)
	return (ev.Type == store.EventPut && n != nil && n.version >= ev.Version && !deleted) ||
		(ev.Type == store.EventDelete && n == nil)
}

// setLocked stores a node, creating missing ancestors as empty nodes;
// t.mu is held. A new node's name is a string of its own, so the path it
// came with is not kept.
func (t *tree) setLocked(p string, value []byte, version int64) {
	if p == "" || p[0] != '/' {
		return // not a path; the backing store refused it
	}
	n := t.top
	for rest := p[1:]; rest != ""; {
		name, more := rest, ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, more = rest[:i], rest[i+1:]
		}
		k := n.kid(name)
		if k == nil {
			k = &node{}
			n.addKid(strings.Clone(name), k)
		}
		n, rest = k, more
	}
	n.value, n.version = valueOf(value), version
}

// removeLocked drops p and its subtree; t.mu is held.
func (t *tree) removeLocked(p string) {
	if p == "/" {
		return
	}
	if pn := t.lookupLocked(store.Parent(p)); pn != nil {
		pn.removeKid(store.Base(p))
	}
}

// swapLocked replaces r's subtree in the copy by fresh, read at
// revisions up to fence; t.mu is held.
func (t *tree) swapLocked(r *root, fresh map[string]store.Node, fence int64) {
	r.resetLocked(fence)
	if t.flights != nil {
		t.flights.wrote(r.path, nil, true)
	}
	if r.path != "/" {
		t.removeLocked(r.path)
	} else {
		t.top = &node{}
	}
	for p, n := range fresh {
		t.setLocked(p, n.Value, n.Version)
	}
}

// putReadLocked applies a read of p (found or not) made at rev (0: a
// store without revisions); t.mu is held.
func (t *tree) putReadLocked(r *root, p string, n store.Node, found bool, rev int64) {
	if rev > 0 {
		if r.staleLocked(p, rev, false) {
			return
		}
		r.noteLocked(p, rev, !found)
	}
	r.touch(p)
	t.wroteLocked(p, nil, !found)
	if found {
		t.setLocked(p, n.Value, n.Version)
	} else {
		t.removeLocked(p)
	}
}

// putOutcomeLocked applies what a successful commit, by, left at p, and
// reports whether it did: not when, on a store without revisions, p was
// written into the copy by another since by flew (flights.overtook): the
// copy may hold a later state than this outcome, and p is to be re-read;
// t.mu is held.
func (t *tree) putOutcomeLocked(r *root, p string, o outcome, by *flight) bool {
	if o.rev > 0 { // ordered by revision (revision.go)
		if r.staleLocked(p, o.rev, false) {
			return true
		}
		r.noteLocked(p, o.rev, !o.exists)
		r.touch(p)
		t.wroteLocked(p, by, !o.exists)
		if o.exists {
			t.setLocked(p, o.value, o.version)
		} else {
			t.removeLocked(p)
		}
		return true
	}
	if by != nil && t.flights != nil && t.flights.overtook(by, p) {
		return false
	}
	r.touch(p)
	if !o.exists {
		t.wroteLocked(p, by, true)
		t.removeLocked(p)
		return true
	}
	if n := t.lookupLocked(p); n != nil && n.version > o.version {
		return true // the copy already holds a later write
	}
	t.wroteLocked(p, by, false)
	t.setLocked(p, o.value, o.version)
	return true
}

// applyValues applies events that carry their change, in order, without
// reading the store. It returns the paths of events that a subtree
// re-read made since the batch began (RefreshAll) put behind its fence:
// those take the read path.
func (t *tree) applyValues(r *root, events []store.Event) (reread []string) {
	r.scan.RLock()
	defer r.scan.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ev := range events {
		if ev.Revision <= r.fence {
			reread = append(reread, ev.Path)
			continue
		}
		if r.staleLocked(ev.Path, ev.Revision, true) {
			continue
		}
		r.touch(ev.Path)
		t.wroteLocked(ev.Path, nil, ev.Type == store.EventDelete)
		if ev.Type == store.EventDelete {
			t.removeLocked(ev.Path)
		} else {
			t.setLocked(ev.Path, ev.Value, ev.Version)
		}
	}
	return reread
}
