package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ejcloud/elasticjob/store"
)

// maxPending is how many undelivered events a watch holds before its
// backlog is replaced by one store.EventResync (store/memory's bound).
const maxPending = 1 << 16

// Watch reports changes of path and its descendants. It watches every
// node key of the store from the revision after the one current when it
// is called, and keeps those under path (see the package doc).
func (s *Store) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := s.ready("watch", path); err != nil {
		return nil, err
	}
	resp, err := s.get(ctx, s.k.guard, clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.fail(ctx, "watch", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, fmt.Errorf("etcd store watch %s: %w", path, store.ErrClosed)
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	out := make(chan store.Event, 64)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		defer cancel()
		s.pump(wctx, path, resp.Header.Revision+1, out)
	}()
	return out, nil
}

// pump follows the store's changes from revision next and hands those
// under root to out until ctx is done, then closes out. An etcd watch
// that ends (a lost member, a leader that is gone) is opened again from
// the revision after the last one received, so nothing is missed; only
// when that revision was compacted away are events lost, and then the
// consumer gets one EventResync and the events after the compaction.
func (s *Store) pump(ctx context.Context, root string, next int64, out chan<- store.Event) {
	defer close(out)
	var pending []store.Event
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		// Each etcd watch has a context of its own, so that one left
		// (for a compaction) stops before the next starts.
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := s.cli.Watch(wctx, s.k.nodes, clientv3.WithPrefix(), clientv3.WithRev(next))
		var err error
		pending, next, err = s.follow(ctx, root, wch, next, pending, out)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("watch interrupted; resuming", "root", root, "from", next, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// follow reads one etcd watch until it ends; it returns the events not
// yet delivered and the revision to resume from.
func (s *Store) follow(ctx context.Context, root string, wch clientv3.WatchChan, next int64, pending []store.Event, out chan<- store.Event) ([]store.Event, int64, error) {
	for {
		var send chan<- store.Event
		var first store.Event
		if len(pending) > 0 {
			send, first = out, pending[0]
		}
		select {
		case <-ctx.Done():
			return pending, next, ctx.Err()
		case send <- first:
			pending = pending[1:]
			if len(pending) == 0 {
				pending = nil
			}
		case resp, ok := <-wch:
			if !ok {
				return pending, next, errors.New("watch channel closed")
			}
			if resp.CompactRevision != 0 {
				// The revisions from next were compacted away.
				pending = append(pending[:0], store.Event{Type: store.EventResync, Path: root, At: time.Now()})
				next = resp.CompactRevision
				return pending, next, fmt.Errorf("revision %d compacted", resp.CompactRevision)
			}
			if err := resp.Err(); err != nil {
				return pending, next, err
			}
			if resp.Canceled {
				return pending, next, errors.New("watch cancelled by the server")
			}
			at := time.Now()
			for _, ev := range resp.Events {
				next = ev.Kv.ModRevision + 1
				e, ok := s.event(ev, at)
				if !ok || !store.Under(e.Path, root) {
					continue
				}
				if len(pending) >= maxPending {
					s.log.Warn("watcher fell behind; resync", "root", root, "limit", maxPending)
					pending = append(pending[:0], store.Event{Type: store.EventResync, Path: root, At: at})
					continue
				}
				pending = append(pending, e)
			}
		}
	}
}

// event translates an etcd event of a node key.
func (s *Store) event(ev *clientv3.Event, at time.Time) (store.Event, bool) {
	p := s.k.path(string(ev.Kv.Key))
	if p == "" {
		return store.Event{}, false
	}
	if ev.Type == mvccpb.DELETE {
		return store.Event{Type: store.EventDelete, Path: p, At: at, HasValue: true, Revision: ev.Kv.ModRevision}, true
	}
	v, val, err := decode(ev.Kv.Value)
	if err != nil {
		s.log.Warn("watch: malformed value", "key", string(ev.Kv.Key), "err", err)
		return store.Event{}, false
	}
	return store.Event{Type: store.EventPut, Path: p, Version: v, At: at, HasValue: true, Value: val, Revision: ev.Kv.ModRevision}, true
}

func quietZap() *zap.Logger { return zap.NewNop() }
