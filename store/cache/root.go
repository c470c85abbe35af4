package cache

import (
	"hash/maphash"
	"sync"

	"github.com/ejcloud/elasticjob/store"
)

// stripes is the number of per-path locks of a root. A re-read holds its
// path's lock over the read (re-reads of one path are serialised), so
// the stripes bound the re-reads in flight: with 16, a standby on
// ZooKeeper read at most 16 changed nodes at a time and fell seconds
// behind a leader writing 2,300 changes a second (p50 3.4 s in the
// simulated cluster); eventReadParallel is the bound meant.
const stripes = 1024

// root is one mirrored subtree.
type root struct {
	path  string
	seed  maphash.Seed
	scan  sync.RWMutex // held for writing while a re-read subtree replaces the copy
	locks [stripes]sync.Mutex
	// touched, while a rescan reads the subtree, collects the paths written
	// into the copy meanwhile (guarded by tree.mu).
	touched map[string]struct{}
	// Guarded by tree.mu (revision.go): every change up to passed is in the
	// copy; events up to fence take the read path; holds are the states
	// written by commits and re-reads, with their revisions.
	passed, fence int64
	holds         map[string]hold
	holdq         []holdAt
}

func newRoot(p string) *root { return &root{path: p, seed: maphash.MakeSeed()} }

// lockOf is the stripe lock of p: the one a re-read or a commit's apply of
// p holds.
func (r *root) lockOf(p string) *sync.Mutex {
	return &r.locks[maphash.String(r.seed, p)%stripes]
}

// touch records that p was written into the copy while a rescan of r
// reads the subtree; tree.mu is held.
func (r *root) touch(p string) {
	if r.touched != nil {
		r.touched[p] = struct{}{}
	}
}

// roots are the mirrored subtrees.
type roots []*root

// of returns the mirrored root holding p, or nil.
func (rs roots) of(p string) *root {
	for _, r := range rs {
		if store.Under(p, r.path) {
			return r
		}
	}
	return nil
}
