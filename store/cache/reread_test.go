package cache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// quorumlessKV answers no Get of path once armed, as an etcd store that
// lost its quorum answers no linearizable read: the Get returns only when
// its context ends, and at once with an error when that context has no
// deadline (the caller would wait forever; the test must not).
type quorumlessKV struct {
	store.KV
	path      string
	armed     atomic.Bool
	unbounded atomic.Int32 // Gets of path made with no deadline
	bounded   atomic.Int32 // Gets of path that waited for their deadline
}

var errNoDeadline = errors.New("a read with no deadline on a store without quorum")

func (q *quorumlessKV) Get(ctx context.Context, p string) (store.Node, error) {
	if p != q.path || !q.armed.Load() {
		return q.KV.Get(ctx, p)
	}
	if _, ok := ctx.Deadline(); !ok {
		q.unbounded.Add(1)
		return store.Node{}, errNoDeadline
	}
	<-ctx.Done()
	q.bounded.Add(1)
	return store.Node{}, ctx.Err()
}

// TestCommitRereadIsBounded: a commit that failed re-reads what it
// touched (the store may hold a newer version) with a deadline of its
// own, also when the caller's context is cancelled meanwhile (a term
// ending), so a store that answers no read (etcd without a quorum) does
// not hold the commit, and the leader's stop, forever.
func TestCommitRereadIsBounded(t *testing.T) {
	t.Run("live", func(t *testing.T) { testCommitRereadIsBounded(t, false) })
	t.Run("cancelled", func(t *testing.T) { testCommitRereadIsBounded(t, true) })
}

func testCommitRereadIsBounded(t *testing.T, cancelled bool) {
	back := &quorumlessKV{KV: memory.New(), path: "/state/x"}
	mustCommit(t, back.KV, store.Create("/state/x", []byte("1")))
	c := openCache(t, back, "/state")
	back.armed.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if cancelled {
		cancel() // the term ended before its commit
	}
	err := c.Commit(ctx, store.Create("/state/x", []byte("2")))
	if err == nil {
		t.Fatal("a create of an existing node succeeded")
	}
	if n := back.unbounded.Load(); n != 0 {
		t.Fatalf("%d re-reads after the commit had no deadline", n)
	}
	if back.bounded.Load() == 0 {
		t.Fatal("the failed commit did not re-read what it touched")
	}
	back.armed.Store(false)
	if nd, err := c.Get(t.Context(), "/state/x"); err != nil || string(nd.Value) != "1" {
		t.Fatalf("copy after the commit: %+v %v", nd, err)
	}
}

// deafKV delivers no watch event of path: a copy following it misses that
// node's changes, as one whose watch overflowed and whose re-read failed.
type deafKV struct {
	store.KV
	path string
}

func (d *deafKV) Watch(ctx context.Context, p string) (<-chan store.Event, error) {
	in, err := d.KV.Watch(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Path == d.path {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// TestFailedCheckRereadsTheCheckedNode: a commit refused by a check of a
// node the copy held stale re-reads that node, so a second try with the
// version read again commits (re-reading only the paths the commit wrote
// would leave a stale gate refusing every cron fire until the watch caught
// up).
func TestFailedCheckRereadsTheCheckedNode(t *testing.T) {
	back := &deafKV{KV: memory.New(), path: "/state/gate"}
	mustCommit(t, back.KV, store.Create("/state/gate", []byte("a")))
	c := openCache(t, back, "/state")
	mustCommit(t, back.KV, store.Put("/state/gate", []byte("b"))) // the copy does not see it
	stale, err := c.Get(t.Context(), "/state/gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(t.Context(), store.Check("/state/gate", stale.Version), store.Create("/state/fire", nil)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a check of a stale version: %v, want a conflict", err)
	}
	fresh, err := c.Get(t.Context(), "/state/gate")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Version == stale.Version || string(fresh.Value) != "b" {
		t.Fatalf("the copy after the refused check: %q at version %d, want %q at a newer version than %d", fresh.Value, fresh.Version, "b", stale.Version)
	}
	if err := c.Commit(t.Context(), store.Check("/state/gate", fresh.Version), store.Create("/state/fire", nil)); err != nil {
		t.Fatalf("the second try: %v", err)
	}
}
