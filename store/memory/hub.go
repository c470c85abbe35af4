package memory

import (
	"context"
	"sync"

	"github.com/ejcloud/elasticjob/store"
)

// DefaultQueue is the number of undelivered events a watcher may hold
// before its backlog is replaced by one store.EventResync. One commit of
// a large registry (a cron second firing thousands of jobs, a launch
// round) publishes that many events at once, and a resync re-reads the
// whole watched subtree, so the bound is generous: an event is a path and
// a version, a few MB at the bound.
const DefaultQueue = 1 << 16

// Hub fans committed events out to watchers. Publish never blocks: each
// watcher has a bounded queue drained by its own goroutine into the
// watcher's channel. When a queue overflows, its backlog is dropped and
// replaced by one EventResync for the watched root; later events follow it.
//
// Callers must Publish in commit order (for example while holding the lock
// that serialises commits); the Hub preserves that order per watcher.
type Hub struct {
	mu     sync.Mutex
	limit  int
	subs   map[*sub]struct{}
	done   chan struct{}
	closed bool
}

type sub struct {
	root  string
	mu    sync.Mutex
	queue []store.Event
	wake  chan struct{} // capacity 1: "queue is not empty"
	out   chan store.Event
}

// NewHub returns a Hub whose watchers hold at most limit queued events
// (DefaultQueue if limit <= 0).
func NewHub(limit int) *Hub {
	if limit <= 0 {
		limit = DefaultQueue
	}
	return &Hub{limit: limit, subs: map[*sub]struct{}{}, done: make(chan struct{})}
}

// Watch registers a watcher of root and its descendants. Events published
// after Watch returns are delivered until ctx is done or the Hub is closed;
// then the channel is closed.
func (h *Hub) Watch(ctx context.Context, root string) (<-chan store.Event, error) {
	s := &sub{root: root, wake: make(chan struct{}, 1), out: make(chan store.Event, 64)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, store.ErrClosed
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go h.pump(ctx, s)
	return s.out, nil
}

// Publish queues events for every watcher whose subtree they touch.
func (h *Hub) Publish(events []store.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.push(events, h.limit)
	}
}

// Close ends every watcher (their channels are closed) and makes later
// Watch calls fail with store.ErrClosed. It is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

func (s *sub) push(events []store.Event, limit int) {
	s.mu.Lock()
	n := len(s.queue)
	for _, ev := range events {
		if ev.Type == store.EventResync && store.Under(s.root, ev.Path) {
			ev.Path = s.root // a resync of an enclosing subtree covers this watcher's root
		} else if !store.Under(ev.Path, s.root) {
			continue
		}
		if len(s.queue) >= limit {
			s.queue = append(s.queue[:0], store.Event{Type: store.EventResync, Path: s.root})
		}
		s.queue = append(s.queue, ev)
	}
	grew := len(s.queue) != n
	s.mu.Unlock()
	if grew {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (h *Hub) pump(ctx context.Context, s *sub) {
	defer func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		close(s.out)
	}()
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case s.out <- ev:
			case <-ctx.Done():
				return
			case <-h.done:
				return
			}
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		case <-h.done:
			return
		}
	}
}
