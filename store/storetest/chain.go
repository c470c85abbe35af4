package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// chain: store.CommitChain applies batches in order, each seeing the
// writes of those before it, and a failed batch fails every batch after
// it, however independent, while those before it stay applied.
func (s suite) chain(t *testing.T, kv store.KV) {
	ctx := context.Background()
	commit(t, kv, store.Create("/c/x", []byte("0")))
	n, evs, err := store.CommitChain(ctx, kv, nil, "/chain", [][]store.Op{
		{store.Put("/c/a", []byte("1")), store.Create("/c/d/e", nil)},
		{store.Put("/c/a", []byte("2")), store.Delete("/c/d", store.AnyVersion)},
		nil,
		{store.Set("/c/x", []byte("1"), 0)},
	})
	if err != nil || n != 4 || len(evs) != 4 {
		t.Fatalf("CommitChain = %d, %d event lists, %v; want 4, 4, nil", n, len(evs), err)
	}
	s.expectNode(t, kv, "/c/a", "2", 1)
	s.expectNode(t, kv, "/c/x", "1", 1)
	if _, err := kv.Get(ctx, "/c/d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/c/d after its delete in the chain: %v", err)
	}
	n, _, err = store.CommitChain(ctx, kv, nil, "/chain", [][]store.Op{
		{store.Put("/c/p", []byte("1"))},
		{store.Set("/c/x", []byte("stale"), 0)},
		{store.Put("/c/q", []byte("1"))},
	})
	if n != 1 || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CommitChain with a conflicting second batch = %d, %v; want 1, ErrConflict", n, err)
	}
	s.expectNode(t, kv, "/c/p", "1", 0)
	s.expectNode(t, kv, "/c/x", "1", 1)
	if _, err := kv.Get(ctx, "/c/q"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/c/q, of the batch after the failed one: %v, want ErrNotFound", err)
	}
}

func (s suite) expectNode(t *testing.T, kv store.KV, p, value string, version int64) {
	t.Helper()
	n, err := kv.Get(context.Background(), p)
	if err != nil || string(n.Value) != value || n.Version != version {
		t.Fatalf("Get(%s) = %q@v%d, %v; want %q@v%d", p, n.Value, n.Version, err, value, version)
	}
}
