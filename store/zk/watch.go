package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/store"
)

const (
	maxPending   = 65_536  // undelivered events before they collapse into one EventResync (a launch round writes thousands)
	maxInbox     = 100_000 // unprocessed notifications before the tree is re-read
	outBuffer    = 1024    // buffer of the consumer's channel
	rescanPause  = 200 * time.Millisecond
	readParallel = 16 // concurrent reads while planning a commit
)

// watcher is one Watch's receiver of the connection's notifications.
type watcher interface{ push(zk.Event) }

// Watch reports changes of path's subtree on one persistent recursive
// watch; see the package doc. A server before ZooKeeper 3.6 has none, and
// Watch then fails with an error that wraps ErrNoPersistentWatches.
func (s *Store) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := s.check(path); err != nil {
		return nil, fmt.Errorf("zk store watch %q: %w", path, err)
	}
	ch, err := s.watchPersistent(ctx, path)
	if errors.Is(err, ErrNoPersistentWatches) {
		return nil, fmt.Errorf("zk store watch %s: %w", path, err)
	}
	return ch, err
}

// register adds w to the receivers of notifications, before its first
// read so that no notification is missed.
func (s *Store) register(w watcher, cancel context.CancelFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.trees[w] = cancel
	return nil
}

func (s *Store) unregister(t watcher) {
	s.mu.Lock()
	delete(s.trees, t)
	s.mu.Unlock()
}

// onEvent is the client's event callback. It runs on the client's receive
// loop, in server order, and must not block.
func (s *Store) onEvent(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.trees {
		t.push(ev)
	}
	if ev.Type == zk.EventSession {
		for _, f := range s.listeners {
			f(ev)
		}
	}
}

// deliver hands out the pending events it takes without waiting, in
// their order, and returns those left. A watch calls it after each
// notification it handles: one that handled thousands of notifications
// before it handed anything on, while the consumer waited, overflowed its
// pending events into a resync though the consumer kept up.
func deliver(out chan<- store.Event, pending []store.Event) []store.Event {
	for len(pending) > 0 {
		select {
		case out <- pending[0]:
			pending = pending[1:]
		default:
			return pending
		}
	}
	return pending
}

// queue appends ev to a watch's pending events; past max of them, the
// consumer fell behind, and they become one resync of the root first.
func queue(log *slog.Logger, root string, max int, pending []store.Event, ev store.Event) []store.Event {
	if len(pending) >= max {
		log.Warn("watch: the consumer fell behind by more events than it holds; it re-reads the subtree",
			"subsystem", "zkstore", "root", root, "limit", max)
		pending = append(pending[:0], store.Event{Type: store.EventResync, Path: root})
	}
	return append(pending, ev)
}
