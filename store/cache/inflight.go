package cache

import (
	"context"
	"sync"
	"time"
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

// flights counts the commits in flight through the cache that write each
// path; settled is closed (and replaced) when one ends.
type flights struct {
	mu      sync.Mutex
	count   map[string]int
	settled chan struct{}
}

func newFlights() *flights {
	return &flights{count: map[string]int{}, settled: make(chan struct{})}
}

// fly records a commit of paths as in flight.
func (f *flights) fly(paths []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		f.count[p]++
	}
}

// land records the commit's end and wakes the worker.
func (f *flights) land(paths []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if f.count[p]--; f.count[p] <= 0 {
			delete(f.count, p)
		}
	}
	close(f.settled)
	f.settled = make(chan struct{})
}

// busy reports whether a commit in flight writes any of paths, and the
// channel closed when one lands.
func (f *flights) busy(paths []string) (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if f.count[p] > 0 {
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
