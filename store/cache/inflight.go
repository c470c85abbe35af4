package cache

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// Commits in flight. On ZooKeeper the watch's notifications of a commit
// arrive before the commit's own reply, so the worker meets events of
// versions the copy does not hold yet, though the commit is about to put
// them there. Re-reading those paths cost a read each over the writer's
// session and held the paths' locks while the commit waited to apply
// them. So the worker waits for the commits in flight on them to land
// (bounded by waitInflight), and re-reads only what is still stale then.

// waitInflight bounds how long the worker waits for commits in flight.
const waitInflight = 5 * time.Second

// flights are the commits in flight through the cache, by the paths they
// write; settled is closed (and replaced) when one ends.
//
// A commit puts what it wrote into the copy only once the store answered
// it, and another writer's change of the same path may be in the copy by
// then: another commit of this process that the store applied after it
// (on the embedded store an urgent commit goes between two links of a
// chain, and the chain answers after its last link) and that answered
// first, or a re-read. Versions order two sets of a node, but not a
// delete and the node created again (its version starts over): the
// older outcome, put into the copy last, would hide the newer state for
// good, since no event follows. So every write into the copy of a path
// that commits have in flight marks it overtaken for them (all but the
// writer), and such a commit re-reads the path instead of putting its
// outcome there (commitThrough).
type flights struct {
	mu      sync.Mutex
	paths   map[string][]*flight // the commits in flight writing each path
	settled chan struct{}
}

// flight is one commit in flight.
type flight struct {
	overtaken map[string]bool // paths written into the copy by another since it flew (under flights.mu)
}

func newFlights() *flights {
	return &flights{paths: map[string][]*flight{}, settled: make(chan struct{})}
}

// fly records a commit of paths as in flight.
func (f *flights) fly(paths []string) *flight {
	fl := &flight{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		f.paths[p] = append(f.paths[p], fl)
	}
	return fl
}

// land records the commit's end and wakes the worker.
func (f *flights) land(fl *flight, paths []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		fls := f.paths[p]
		if i := slices.Index(fls, fl); i >= 0 {
			fls = slices.Delete(fls, i, i+1)
		}
		if len(fls) == 0 {
			delete(f.paths, p)
		} else {
			f.paths[p] = fls
		}
	}
	close(f.settled)
	f.settled = make(chan struct{})
}

// wrote marks p (and, for a subtree removed or replaced, every path under
// it) overtaken for the commits in flight writing it, but by (nil: a
// re-read, a watch's event). Called with tree.mu held, so that a commit's
// check (overtook) and its write of p are one step against it.
func (f *flights) wrote(p string, by *flight, subtree bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mark := func(q string, fls []*flight) {
		for _, fl := range fls {
			if fl == by {
				continue
			}
			if fl.overtaken == nil {
				fl.overtaken = map[string]bool{}
			}
			fl.overtaken[q] = true
		}
	}
	if !subtree {
		mark(p, f.paths[p])
		return
	}
	for q, fls := range f.paths {
		if store.Under(q, p) {
			mark(q, fls)
		}
	}
}

// overtook reports whether p was written into the copy by another since
// fl flew (wrote).
func (f *flights) overtook(fl *flight, p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fl.overtaken[p]
}

// busy reports whether a commit in flight writes any of paths, and the
// channel closed when one lands.
func (f *flights) busy(paths []string) (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if len(f.paths[p]) > 0 {
			return true, f.settled
		}
	}
	return false, nil
}

// awaitLanded waits until no commit in flight writes any of paths, or
// waitInflight passed, or ctx ended.
func (f *flights) awaitLanded(ctx context.Context, paths []string) {
	deadline := time.NewTimer(waitInflight)
	defer deadline.Stop()
	for {
		busy, wake := f.busy(paths)
		if !busy {
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
