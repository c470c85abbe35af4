package cache

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// Options.StrictWatch: a commit waits until the backing store's events of
// what it wrote have been passed on to the cache's watchers.

// waitEvents bounds how long Commit waits for its own events to pass.
const waitEvents = 5 * time.Second

// waiters are the commits in flight that wait for their events, by path.
type waiters struct {
	mu sync.RWMutex
	by map[string]map[*pending]struct{}
}

func newWaiters() *waiters { return &waiters{by: map[string]map[*pending]struct{}{}} }

// pending is a commit in flight: it collects the events of its paths that
// are passed on from the moment it began, so none can slip by unseen.
type pending struct {
	mu       sync.Mutex
	seen     map[string][]store.Event
	resynced bool
	wake     chan struct{}
}

func (pd *pending) note(ev store.Event) {
	pd.mu.Lock()
	if ev.Type == store.EventResync {
		pd.resynced = true
	} else {
		pd.seen[ev.Path] = append(pd.seen[ev.Path], ev)
	}
	pd.mu.Unlock()
	select {
	case pd.wake <- struct{}{}:
	default:
	}
}

// begin registers a commit of paths (the mirrored ones) before it is
// sent.
func (w *waiters) begin(paths []string) *pending {
	pd := &pending{seen: map[string][]store.Event{}, wake: make(chan struct{}, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths {
		m := w.by[p]
		if m == nil {
			m = map[*pending]struct{}{}
			w.by[p] = m
		}
		m[pd] = struct{}{}
	}
	return pd
}

func (w *waiters) end(pd *pending, paths []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths {
		if m := w.by[p]; m != nil {
			delete(m, pd)
			if len(m) == 0 {
				delete(w.by, p)
			}
		}
	}
}

// release hands a passed-on event to the commits waiting on its path.
func (w *waiters) release(ev store.Event) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for pd := range w.by[ev.Path] {
		pd.note(ev)
	}
}

// releaseUnder tells every commit with a path under p that a resync
// replaced the events.
func (w *waiters) releaseUnder(p string) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for q, m := range w.by {
		if store.Under(q, p) {
			for pd := range m {
				pd.note(store.Event{Type: store.EventResync, Path: p})
			}
		}
	}
}

// want is what a committed path waits for: a put of at least version, or
// a delete.
type want struct {
	del     bool
	version int64
}

// await waits until pd saw what wants say (or a resync), or waitEvents
// passed, or ctx ended.
func (pd *pending) await(ctx context.Context, wants map[string]want, log *slog.Logger) {
	t := time.NewTimer(waitEvents)
	defer t.Stop()
	for !pd.satisfied(wants) {
		select {
		case <-pd.wake:
		case <-t.C:
			log.Warn("cache: a commit's events did not arrive in time", "wait", waitEvents)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (pd *pending) satisfied(wants map[string]want) bool {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.resynced {
		return true
	}
	for p, w := range wants {
		ok := false
		for _, ev := range pd.seen[p] {
			if (w.del && ev.Type == store.EventDelete) || (!w.del && ev.Type == store.EventPut && ev.Version >= w.version) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
		delete(wants, p)
	}
	return true
}
