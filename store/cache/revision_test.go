package cache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// countingStore is a memory store (store.Revisioned) that counts reads of
// single nodes.
type countingStore struct {
	*memory.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, p string) (store.Node, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, p)
}

func (s *countingStore) GetAt(ctx context.Context, p string) (store.Node, int64, error) {
	s.gets.Add(1)
	return s.Store.GetAt(ctx, p)
}

// TestEventsApplyWithoutReads: on a store whose events carry the change,
// another writer's puts, deletes and re-creations reach the copy and its
// watchers without a read of the store, in order, and the copy ends
// equal to the store.
func TestEventsApplyWithoutReads(t *testing.T) {
	back := &countingStore{Store: memory.New()}
	mustCommit(t, back, store.Create("/state/a", []byte("0")))
	c := openCache(t, back, "/state")
	w, err := c.Watch(t.Context(), "/state")
	if err != nil {
		t.Fatal(err)
	}
	before := back.gets.Load()
	const n = 200
	for i := range n {
		mustCommit(t, back, store.Put("/state/a", fmt.Appendf(nil, "%d", i+1)),
			store.Put(fmt.Sprintf("/state/d/x%d", i%7), []byte("v")))
		if i%10 == 9 { // a subtree deleted and re-created
			mustCommit(t, back, store.Delete("/state/d", store.AnyVersion), store.Create("/state/d/y", []byte("new")))
		}
	}
	mustCommit(t, back, store.Put("/state/end", nil))
	for ev := next(t, w); ev.Path != "/state/end"; ev = next(t, w) {
		if !ev.HasValue || ev.Revision == 0 {
			t.Fatalf("event without its change: %+v", ev)
		}
	}
	if got := back.gets.Load() - before; got != 0 {
		t.Fatalf("the cache read the store %d times to follow another writer", got)
	}
	assertSameTree(t, c, back.Store, "/state")
}

// TestOwnWritesHoldAgainstLateEvents: a commit of this process shows at
// once, and the events of earlier commits (of any writer) that arrive
// after it never put an older state back, also across a subtree deleted
// and written under again in one commit.
func TestOwnWritesHoldAgainstLateEvents(t *testing.T) {
	back := memory.New()
	c := openCache(t, back, "/state")
	for i := range 300 {
		// Another writer changes the subtree; this process then deletes
		// it and writes under it again, and reads its write at once.
		mustCommit(t, back, store.Put(fmt.Sprintf("/state/s/o%d", i%5), []byte("other")), store.Put("/state/s/k", []byte("old")))
		v := fmt.Appendf(nil, "mine%d", i)
		mustCommit(t, c, store.Delete("/state/s", store.AnyVersion), store.Put("/state/s/k", v))
		n, err := c.Get(t.Context(), "/state/s/k")
		if err != nil || string(n.Value) != string(v) {
			t.Fatalf("commit %d: read %q %v, want %q", i, n.Value, err, v)
		}
		if kids, _ := c.Children(t.Context(), "/state/s"); len(kids) != 1 {
			t.Fatalf("commit %d: children of /state/s after its delete: %v", i, kids)
		}
	}
	mustCommit(t, c, store.Put("/state/end", nil))
	assertSameTree(t, c, back, "/state")
}

// assertSameTree compares the cache's copy of root with the store's.
func assertSameTree(t *testing.T, c store.KV, back store.KV, root string) {
	t.Helper()
	var walk func(p string)
	walk = func(p string) {
		want, werr := back.Get(t.Context(), p)
		got, gerr := c.Get(t.Context(), p)
		if (werr == nil) != (gerr == nil) || string(want.Value) != string(got.Value) || want.Version != got.Version {
			t.Fatalf("%s: copy %+v %v, store %+v %v", p, got, gerr, want, werr)
		}
		wk, _ := back.Children(t.Context(), p)
		gk, _ := c.Children(t.Context(), p)
		if fmt.Sprint(wk) != fmt.Sprint(gk) {
			t.Fatalf("children of %s: copy %v, store %v", p, gk, wk)
		}
		for _, k := range wk {
			walk(store.Join(p, k))
		}
	}
	walk(root)
}
