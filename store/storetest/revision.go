package storetest

import (
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// revisioned checks a store.Revisioned store (skipped for others): every
// event carries its change and the revision of its commit, as CommitAt
// returned it; revisions grow from commit to commit; GetAt reads at a
// revision no older than the last commit, also for a missing node.
func (s suite) revisioned(t *testing.T, kv store.KV) {
	rv, ok := kv.(store.Revisioned)
	if !ok {
		t.Skip("not a store.Revisioned")
	}
	ctx := t.Context()
	commit(t, kv, store.Create("/rv", nil))
	ch, _ := watch(t, kv, "/rv")
	r1, err := rv.CommitAt(ctx, store.Create("/rv/a/b", []byte("one")))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rv.CommitAt(ctx, store.Put("/rv/a/b", []byte("two")), store.Put("/rv/c", nil))
	if err != nil {
		t.Fatal(err)
	}
	r3, err := rv.CommitAt(ctx, store.Delete("/rv/a", store.AnyVersion))
	if err != nil {
		t.Fatal(err)
	}
	if r1 <= 0 || r2 <= r1 || r3 <= r2 {
		t.Fatalf("commit revisions %d, %d, %d: want growing", r1, r2, r3)
	}
	want := []struct {
		ev    store.Event
		value string
	}{
		{store.Event{Type: store.EventPut, Path: "/rv/a", Revision: r1}, ""},
		{store.Event{Type: store.EventPut, Path: "/rv/a/b", Version: 0, Revision: r1}, "one"},
		{store.Event{Type: store.EventPut, Path: "/rv/a/b", Version: 1, Revision: r2}, "two"},
		{store.Event{Type: store.EventPut, Path: "/rv/c", Revision: r2}, ""},
		{store.Event{Type: store.EventDelete, Path: "/rv/a/b", Revision: r3}, ""},
		{store.Event{Type: store.EventDelete, Path: "/rv/a", Revision: r3}, ""},
	}
	for i, w := range want {
		got := s.next(t, ch)
		if !got.HasValue || got.Type != w.ev.Type || got.Path != w.ev.Path || got.Revision != w.ev.Revision ||
			(got.Type == store.EventPut && (got.Version != w.ev.Version || string(got.Value) != w.value)) {
			t.Fatalf("event %d = %+v (value %q), want %+v with value %q", i, got, got.Value, w.ev, w.value)
		}
	}
	n, rev, err := rv.GetAt(ctx, "/rv/c")
	if err != nil || rev < r3 || n.Version != 0 {
		t.Fatalf("GetAt(/rv/c) = %+v at %d, %v; want version 0 at %d or later", n, rev, err, r3)
	}
	if _, rev, err := rv.GetAt(ctx, "/rv/a"); !errors.Is(err, store.ErrNotFound) || rev < r3 {
		t.Fatalf("GetAt(/rv/a) at %d: %v; want not found at %d or later", rev, err, r3)
	}
	if rev, err := rv.Revision(ctx); err != nil || rev < r3 {
		t.Fatalf("Revision() = %d, %v; want %d or later", rev, err, r3)
	}
}
