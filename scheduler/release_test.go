package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// quorumlessKV answers no listing of the apps once armed, as an etcd
// store that lost its quorum answers no linearizable read: the List
// returns only when its context ends, and at once with an error when that
// context could never end (no deadline, not cancelled), where the caller
// would wait forever and the test must not.
type quorumlessKV struct {
	store.KV
	armed     atomic.Bool
	unbounded atomic.Int32
	bounded   atomic.Int32
}

func (q *quorumlessKV) List(ctx context.Context, p string) ([]store.Node, error) {
	if p != registry.AppsPath || !q.armed.Load() {
		return q.KV.List(ctx, p)
	}
	if _, ok := ctx.Deadline(); !ok && ctx.Err() == nil {
		q.unbounded.Add(1)
		return nil, errors.New("a read with no deadline on a store without quorum")
	}
	<-ctx.Done()
	q.bounded.Add(1)
	return nil, ctx.Err()
}

// TestTermEndsOnAStoreWithoutQuorum: the catalog's sync when a term hands
// it back (Run's end) has a deadline of its own, so a term ending on a
// store that answers no read (etcd without a quorum: the last members of
// a cluster stopping) returns instead of holding the scheduler's stop. In
// a synctest bubble the bound passes on the bubble's clock: Run returns
// releaseBound after the term ended, without the test waiting for it.
func TestTermEndsOnAStoreWithoutQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.addApp("app", 4, 4096)
		catalogJob(t, r, "a", 2)
		back := &quorumlessKV{KV: r.kv}
		reg := registry.New(back)
		c := NewCatalog(reg)
		s := New(Deps{Registry: reg, Driver: r.drv, Clock: r.clk, Catalog: c})
		ctx, cancel := context.WithCancel(r.ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		select {
		case <-s.ready:
		case err := <-done:
			t.Fatalf("Run ended before loading: %v", err)
		}
		back.armed.Store(true) // the quorum is lost
		ended := time.Now()
		cancel() // and the term ends
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(ended); took != releaseBound {
			t.Fatalf("Run returned %v after the term ended, want the sync's bound %v", took, releaseBound)
		}
		if n := back.unbounded.Load(); n != 0 {
			t.Fatalf("%d reads after the term had no deadline", n)
		}
		if back.bounded.Load() == 0 {
			t.Fatal("the catalog was not synced when the term ended")
		}
		c.wmu.Lock()
		taken := c.taken
		c.wmu.Unlock()
		if taken {
			t.Fatal("the catalog is still held by the ended term")
		}
	})
}
