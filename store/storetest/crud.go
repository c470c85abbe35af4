package storetest

import (
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func (s suite) getMissing(t *testing.T, kv store.KV) {
	wantMissing(t, kv, "/missing")
	wantMissing(t, kv, "/missing/deeper")
	commit(t, kv, store.Create("/a", nil))
	wantMissing(t, kv, "/a/b")
	wantMissing(t, kv, "/ab")
}

func (s suite) create(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/c", []byte("v")))
	wantNode(t, kv, "/c", "v", 0)
	commitErr(t, kv, store.ErrExists, store.Create("/c", []byte("other")))
	wantNode(t, kv, "/c", "v", 0)
	commit(t, kv, store.Create("/empty", nil))
	wantNode(t, kv, "/empty", "", 0)
}

func (s suite) put(t *testing.T, kv store.KV) {
	commit(t, kv, store.Put("/p", []byte("one")))
	wantNode(t, kv, "/p", "one", 0)
	commit(t, kv, store.Put("/p", []byte("two")))
	wantNode(t, kv, "/p", "two", 1)
	commit(t, kv, store.Put("/p", nil))
	wantNode(t, kv, "/p", "", 2)
}

func (s suite) set(t *testing.T, kv store.KV) {
	commitErr(t, kv, store.ErrNotFound, store.Set("/s", []byte("x"), 0))
	commitErr(t, kv, store.ErrNotFound, store.Set("/s", []byte("x"), store.AnyVersion))
	wantMissing(t, kv, "/s")
	commit(t, kv, store.Create("/s", []byte("a")))
	commitErr(t, kv, store.ErrConflict, store.Set("/s", []byte("b"), 1))
	wantNode(t, kv, "/s", "a", 0)
	commit(t, kv, store.Set("/s", []byte("b"), 0))
	wantNode(t, kv, "/s", "b", 1)
	commitErr(t, kv, store.ErrConflict, store.Set("/s", []byte("c"), 0))
	commit(t, kv, store.Set("/s", []byte("c"), store.AnyVersion))
	wantNode(t, kv, "/s", "c", 2)
}

func (s suite) versions(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/v", nil))
	for i := int64(1); i <= 5; i++ {
		if i%2 == 0 {
			commit(t, kv, store.Put("/v", []byte{byte(i)}))
		} else {
			commit(t, kv, store.Set("/v", []byte{byte(i)}, i-1))
		}
		if n := get(t, kv, "/v"); n.Version != i {
			t.Fatalf("after %d writes version = %d", i, n.Version)
		}
	}
	commit(t, kv, store.Delete("/v", store.AnyVersion))
	commit(t, kv, store.Put("/v", []byte("again")))
	wantNode(t, kv, "/v", "again", 0)
}

func (s suite) ancestors(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/a/b/c", []byte("leaf")))
	wantNode(t, kv, "/a", "", 0)
	wantNode(t, kv, "/a/b", "", 0)
	wantNode(t, kv, "/a/b/c", "leaf", 0)
	commitErr(t, kv, store.ErrExists, store.Create("/a/b", nil))
	commit(t, kv, store.Put("/x/y", []byte("p")))
	wantNode(t, kv, "/x", "", 0)
	commit(t, kv, store.Put("/a", []byte("now set")))
	wantNode(t, kv, "/a", "now set", 1)
	commit(t, kv, store.Create("/a/b/d", nil)) // existing ancestors untouched
	wantNode(t, kv, "/a", "now set", 1)
	wantNode(t, kv, "/a/b", "", 0)
	equal(t, "Children(/a/b)", children(t, kv, "/a/b"), []string{"c", "d"})
	// An ancestor deleted earlier in the same batch is created again.
	commit(t, kv, store.Delete("/a", store.AnyVersion), store.Create("/a/n", []byte("new")))
	wantNode(t, kv, "/a", "", 0)
	wantNode(t, kv, "/a/n", "new", 0)
	equal(t, "Children(/a)", children(t, kv, "/a"), []string{"n"})
	// …also under a blind put.
	commit(t, kv, store.Delete("/a", store.AnyVersion), store.Put("/a/p/q", []byte("put")))
	wantNode(t, kv, "/a/p/q", "put", 0)
	equal(t, "Children(/a)", children(t, kv, "/a"), []string{"p"})
}

func (s suite) root(t *testing.T, kv store.KV) {
	wantNode(t, kv, "/", "", 0)
	commit(t, kv, store.Check("/", store.AnyVersion))
	commit(t, kv, store.Create("/b", nil), store.Create("/a/x", nil))
	equal(t, "Children(/)", children(t, kv, "/"), []string{"a", "b"})
}

func (s suite) children(t *testing.T, kv store.KV) {
	commit(t, kv,
		store.Create("/p/b", nil), store.Create("/p/a10", nil), store.Create("/p/a9", nil),
		store.Create("/p/B", nil), store.Create("/p/c/deep", nil),
		store.Create("/pp/x", nil), store.Create("/p-1/y", nil), store.Create("/p0", nil))
	equal(t, "Children(/p)", children(t, kv, "/p"), []string{"B", "a10", "a9", "b", "c"})
	equal(t, "Children(/p/c)", children(t, kv, "/p/c"), []string{"deep"})
	equal(t, "Children(/p/b)", children(t, kv, "/p/b"), nil)
	equal(t, "Children(/missing)", children(t, kv, "/missing"), nil)
	equal(t, "Children(/)", children(t, kv, "/"), []string{"p", "p-1", "p0", "pp"})
}

func (s suite) list(t *testing.T, kv store.KV) {
	commit(t, kv, store.Put("/l/b", []byte("B")), store.Put("/l/a", []byte("A")),
		store.Put("/l/c/deep", []byte("D")), store.Put("/l/b", []byte("B2")), store.Put("/lx", nil))
	got, err := kv.List(t.Context(), "/l")
	if err != nil {
		t.Fatalf("List(/l): %v", err)
	}
	want := []store.Node{
		{Path: "/l/a", Value: []byte("A")},
		{Path: "/l/b", Value: []byte("B2"), Version: 1},
		{Path: "/l/c"},
	}
	equalNodes(t, "List(/l)", got, want)
	for _, p := range []string{"/missing", "/l/a"} {
		got, err := kv.List(t.Context(), p)
		if err != nil || len(got) != 0 {
			t.Fatalf("List(%s) = %v, %v; want empty", p, got, err)
		}
	}
}
