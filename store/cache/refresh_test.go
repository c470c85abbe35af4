package cache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// staleOnce answers the first Get of path with a node read before its
// deletion: what a Refresh reads when the node is deleted right after, and
// the backing watch, as ZooKeeper's may, never reports the short-lived
// node at all.
type staleOnce struct {
	store.KV
	path string
	used atomic.Bool
}

func (s *staleOnce) Get(ctx context.Context, p string) (store.Node, error) {
	if p == s.path && !s.used.Swap(true) {
		return store.Node{Path: p, Value: []byte("1"), Version: 1}, nil
	}
	return s.KV.Get(ctx, p)
}

// A node a Refresh revealed is read again a second later: one that was
// gone by then leaves the copy, though no event ever told of it. In a
// synctest bubble, so the second passes on the fake clock.
func TestRefreshedNodeReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		back := &staleOnce{KV: memory.New(), path: "/state/ready/job"}
		c := openCache(t, back, "/state")
		if err := c.Refresh(t.Context(), back.path); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(t.Context(), back.path); err != nil || !back.used.Load() {
			t.Fatalf("the refresh did not put the node it read in the copy: %v", err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, err := c.Get(t.Context(), back.path); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the node read before its deletion is still in the copy: %v", err)
		}
		// A node that is there stays.
		mustCommit(t, back, store.Create("/state/ready/other", []byte("x")))
		if err := c.Refresh(t.Context(), "/state/ready/other"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n, err := c.Get(t.Context(), "/state/ready/other"); err != nil || string(n.Value) != "x" {
			t.Fatalf("refreshed node: %+v %v", n, err)
		}
	})
}
