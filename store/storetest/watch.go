package storetest

import (
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func put(path string, version int64) store.Event {
	return store.Event{Type: store.EventPut, Path: path, Version: version}
}

func del(path string) store.Event { return store.Event{Type: store.EventDelete, Path: path} }

// expect reads len(want) events and compares them in order. Delete
// versions are not compared; Put versions unless SkipEventVersion.
func (s suite) expect(t *testing.T, ch <-chan store.Event, want ...store.Event) {
	t.Helper()
	if s.opts.PerPathOrder {
		s.expectPerPath(t, ch, want...)
		return
	}
	for i, w := range want {
		got := s.next(t, ch)
		if !s.same(got, w) {
			t.Fatalf("event %d = %+v, want %+v", i, got, w)
		}
	}
}

// expectPerPath reads len(want) events and checks that each path's events
// arrive in the wanted order; events of different paths may interleave.
func (s suite) expectPerPath(t *testing.T, ch <-chan store.Event, want ...store.Event) {
	t.Helper()
	byPath := map[string][]store.Event{}
	for _, w := range want {
		byPath[w.Path] = append(byPath[w.Path], w)
	}
	for i := range want {
		got := s.next(t, ch)
		q := byPath[got.Path]
		if len(q) == 0 || !s.same(got, q[0]) {
			t.Fatalf("event %d = %+v, want the next event of %s to be %+v", i, got, got.Path, q)
		}
		byPath[got.Path] = q[1:]
	}
}

func (s suite) same(got, want store.Event) bool {
	if got.Type != want.Type || got.Path != want.Path {
		return false
	}
	return want.Type != store.EventPut || s.opts.SkipEventVersion || got.Version == want.Version
}

func (s suite) watchEvents(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/w", nil))
	ch, _ := watch(t, kv, "/w")
	commit(t, kv, store.Put("/wx/y", nil), store.Put("/other", nil)) // outside
	commit(t, kv, store.Create("/w/a", []byte("1")))
	commit(t, kv, store.Put("/w/a", []byte("2")))
	commit(t, kv, store.Set("/w/a", []byte("3"), 1))
	commit(t, kv, store.Create("/w/b", nil), store.Check("/w/a", 2), store.Delete("/w/a", 2))
	commit(t, kv, store.Create("/w/b/c", nil))
	commitErr(t, kv, store.ErrExists, store.Put("/w/z", nil), store.Create("/w/b", nil))
	commit(t, kv, store.Put("/wx/z", nil), store.Check("/w", 0)) // outside, check only
	commit(t, kv, store.Delete("/w/b", store.AnyVersion))
	commit(t, kv, store.Create("/w/d/e", nil)) // ancestor /w/d is reported too
	commit(t, kv, store.Put("/w", []byte("end")))
	s.expect(t, ch,
		put("/w/a", 0), put("/w/a", 1), put("/w/a", 2),
		put("/w/b", 0), del("/w/a"),
		put("/w/b/c", 0),
		del("/w/b/c"), del("/w/b"),
		put("/w/d", 0), put("/w/d/e", 0),
		put("/w", 1))
}

func (s suite) watchRecursiveDelete(t *testing.T, kv store.KV) {
	tree := []string{"/r/a/x", "/r/a/y", "/r/b", "/r/a"}
	for _, p := range tree[:3] {
		commit(t, kv, store.Create(p, nil))
	}
	ch, _ := watch(t, kv, "/")
	commit(t, kv, store.Delete("/r", store.AnyVersion))
	commit(t, kv, store.Put("/marker", nil))
	seen := map[string]bool{}
	for range len(tree) + 1 {
		ev := s.next(t, ch)
		if ev.Type != store.EventDelete || seen[ev.Path] {
			t.Fatalf("unexpected event %+v (seen %v)", ev, seen)
		}
		for _, p := range tree {
			if memberOf(p, ev.Path) && p != ev.Path && !seen[p] {
				t.Fatalf("delete of %s reported before its descendant %s", ev.Path, p)
			}
		}
		seen[ev.Path] = true
	}
	if !seen["/r"] {
		t.Fatalf("no delete event for /r: %v", seen)
	}
	s.expect(t, ch, put("/marker", 0))
}

func memberOf(p, root string) bool {
	return p == root || (len(p) > len(root) && p[:len(root)] == root && p[len(root)] == '/')
}

func (s suite) watchNotBefore(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/w/old", nil))
	commit(t, kv, store.Put("/w/old", nil))
	ch, _ := watch(t, kv, "/w")
	commit(t, kv, store.Create("/w/new", nil))
	s.expect(t, ch, put("/w/new", 0))
}

// watchSubtree: a watch of /w/a sees /w/a itself and its descendants, not
// siblings sharing a prefix; a watch of a missing path works; two watches
// see the same events.
func (s suite) watchSubtree(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/w/a", nil))
	leaf, _ := watch(t, kv, "/w/a")
	missing, _ := watch(t, kv, "/w/a/b")
	all, _ := watch(t, kv, "/")
	commit(t, kv, store.Put("/w/ab", nil), store.Put("/w/a-", nil), store.Put("/w", nil))
	commit(t, kv, store.Put("/w/a", nil))
	commit(t, kv, store.Create("/w/a/b", nil))
	commit(t, kv, store.Create("/w/a/b/c", nil))
	s.expect(t, leaf, put("/w/a", 1), put("/w/a/b", 0), put("/w/a/b/c", 0))
	s.expect(t, missing, put("/w/a/b", 0), put("/w/a/b/c", 0))
	s.expect(t, all, put("/w/ab", 0), put("/w/a-", 0), put("/w", 1),
		put("/w/a", 1), put("/w/a/b", 0), put("/w/a/b/c", 0))
}

func (s suite) watchCancel(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/w", nil))
	ch, cancel := watch(t, kv, "/w")
	commit(t, kv, store.Create("/w/x", nil))
	s.expect(t, ch, put("/w/x", 0))
	cancel()
	commit(t, kv, store.Create("/w/y", nil))
	s.waitClosed(t, ch)
}
