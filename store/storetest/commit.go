package storetest

import (
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func (s suite) deleteOps(t *testing.T, kv store.KV) {
	commit(t, kv, store.Delete("/none", store.AnyVersion))
	commitErr(t, kv, store.ErrNotFound, store.Delete("/none", 0))
	commit(t, kv, store.Create("/d", []byte("x")), store.Put("/d", []byte("y")))
	commitErr(t, kv, store.ErrConflict, store.Delete("/d", 0))
	wantNode(t, kv, "/d", "y", 1)
	commit(t, kv, store.Delete("/d", 1))
	wantMissing(t, kv, "/d")
	commit(t, kv, store.Create("/e", nil))
	commit(t, kv, store.Delete("/e", store.AnyVersion))
	wantMissing(t, kv, "/e")
	equal(t, "Children(/)", children(t, kv, "/"), nil)
}

func (s suite) deleteRecursive(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/d/x/y", nil), store.Create("/d/z", nil),
		store.Create("/dd", nil), store.Create("/d-1", nil), store.Create("/d_x", nil),
		store.Create("/keep/d/x", nil))
	commit(t, kv, store.Delete("/d", store.AnyVersion))
	for _, p := range []string{"/d", "/d/x", "/d/x/y", "/d/z"} {
		wantMissing(t, kv, p)
	}
	for _, p := range []string{"/dd", "/d-1", "/d_x", "/keep/d/x"} {
		get(t, kv, p)
	}
	equal(t, "Children(/)", children(t, kv, "/"), []string{"d-1", "d_x", "dd", "keep"})
	equal(t, "Children(/d)", children(t, kv, "/d"), nil)
	// A versioned delete of a subtree checks only the named node.
	commit(t, kv, store.Create("/t/a", nil), store.Put("/t/a", nil))
	commit(t, kv, store.Delete("/t", 0))
	wantMissing(t, kv, "/t/a")
}

func (s suite) check(t *testing.T, kv store.KV) {
	commitErr(t, kv, store.ErrNotFound, store.Check("/leader", store.AnyVersion))
	commitErr(t, kv, store.ErrNotFound, store.Check("/leader", 0))
	commit(t, kv, store.Create("/leader", []byte("me")))
	commit(t, kv, store.Check("/leader", 0))
	commit(t, kv, store.Check("/leader", store.AnyVersion))
	commitErr(t, kv, store.ErrConflict, store.Check("/leader", 1))
	wantNode(t, kv, "/leader", "me", 0) // Check writes nothing

	// Fencing: a write guarded by a stale leadership version is refused.
	commit(t, kv, store.Check("/leader", 0), store.Put("/state/a", []byte("1")))
	commit(t, kv, store.Set("/leader", []byte("you"), 0))
	commitErr(t, kv, store.ErrConflict, store.Check("/leader", 0), store.Put("/state/b", []byte("2")))
	wantMissing(t, kv, "/state/b")
	wantNode(t, kv, "/state/a", "1", 0)
}

func (s suite) commitInOrder(t *testing.T, kv store.KV) {
	commit(t, kv) // an empty batch is fine
	commit(t, kv,
		store.Create("/o", []byte("a")),
		store.Set("/o", []byte("b"), 0),
		store.Check("/o", 1),
		store.Put("/o", []byte("c")))
	wantNode(t, kv, "/o", "c", 2)
	commit(t, kv, store.Delete("/o", 2), store.Create("/o", []byte("new")), store.Create("/o/kid", nil))
	wantNode(t, kv, "/o", "new", 0)
	commit(t, kv, store.Create("/q/r", nil), store.Delete("/q", store.AnyVersion),
		store.Create("/q", nil), store.Check("/q", 0))
	wantMissing(t, kv, "/q/r")
}

// commitAtomic: a batch whose last op fails leaves nothing of its earlier
// ops, for every kind of failure.
func (s suite) commitAtomic(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/k", []byte("old")), store.Create("/e/child", []byte("c")),
		store.Create("/exists", nil))
	failing := []struct {
		name string
		op   store.Op
		err  error
	}{
		{"Conflict", store.Set("/k", nil, 7), store.ErrConflict},
		{"NotFound", store.Set("/nope", nil, store.AnyVersion), store.ErrNotFound},
		{"Exists", store.Create("/exists", nil), store.ErrExists},
		{"CheckMissing", store.Check("/nope", store.AnyVersion), store.ErrNotFound},
		{"DeleteVersion", store.Delete("/exists", 3), store.ErrConflict},
		{"BadPath", store.Put("/bad/", nil), store.ErrBadPath},
	}
	for _, f := range failing {
		t.Run(f.name, func(t *testing.T) {
			commitErr(t, kv, f.err,
				store.Put("/k", []byte("new")),
				store.Set("/k", []byte("newer"), 1),
				store.Create("/n/m/o", []byte("x")),
				store.Delete("/e", store.AnyVersion),
				store.Put("/exists", []byte("overwritten")),
				f.op)
			wantNode(t, kv, "/k", "old", 0)
			wantMissing(t, kv, "/n")
			wantNode(t, kv, "/e/child", "c", 0)
			wantNode(t, kv, "/exists", "", 0)
			equal(t, "Children(/)", children(t, kv, "/"), []string{"e", "exists", "k"})
		})
		// The same where no op's path is another's or its ancestor (a
		// store may check such ops before writing any).
		t.Run(f.name+"Independent", func(t *testing.T) {
			commitErr(t, kv, f.err,
				store.Put("/p", []byte("new")),
				store.Create("/n/m/o", []byte("x")),
				store.Delete("/e", store.AnyVersion),
				f.op)
			wantMissing(t, kv, "/p")
			wantMissing(t, kv, "/n")
			wantNode(t, kv, "/e/child", "c", 0)
			equal(t, "Children(/)", children(t, kv, "/"), []string{"e", "exists", "k"})
		})
	}
}

func (s suite) commitFirstError(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/x", nil))
	err := kv.Commit(t.Context(), store.Set("/missing", nil, 0), store.Create("/x", nil))
	wantErr(t, "first failing op", err, store.ErrNotFound)
	err = kv.Commit(t.Context(), store.Create("/x", nil), store.Set("/missing", nil, 0))
	wantErr(t, "first failing op", err, store.ErrExists)
}

func (s suite) badPaths(t *testing.T, kv store.KV) {
	bad := []string{"", "a", "a/b", "/a/", "//", "//a", "/a//b", "/a/../b", "/a/..",
		"/..", "/.", "/a/./b", "/a/.", "/a\x00b"}
	ctx := t.Context()
	for _, p := range bad {
		_, err := kv.Get(ctx, p)
		wantErr(t, "Get("+p+")", err, store.ErrBadPath)
		_, err = kv.Children(ctx, p)
		wantErr(t, "Children("+p+")", err, store.ErrBadPath)
		_, err = kv.List(ctx, p)
		wantErr(t, "List("+p+")", err, store.ErrBadPath)
		_, err = kv.Watch(ctx, p)
		wantErr(t, "Watch("+p+")", err, store.ErrBadPath)
		for _, op := range []store.Op{store.Create(p, nil), store.Put(p, nil),
			store.Set(p, nil, store.AnyVersion), store.Delete(p, store.AnyVersion),
			store.Check(p, store.AnyVersion)} {
			commitErr(t, kv, store.ErrBadPath, store.Put("/ok", nil), op)
		}
	}
	wantMissing(t, kv, "/ok")
	// Dots inside a segment are ordinary names.
	commit(t, kv, store.Create("/a.b/..c/d.", nil))
	get(t, kv, "/a.b/..c/d.")
}

// commitLargeBatch: a batch of hundreds of ops on independent paths (what
// a launch round commits) applies every kind of op, and a failing op far
// into it leaves nothing of the batch written.
func (s suite) commitLargeBatch(t *testing.T, kv store.KV) {
	name := func(kind string, i int) string { return fmt.Sprintf("/big/%s-%03d", kind, i) }
	var ops []store.Op
	for i := range 150 {
		ops = append(ops, store.Create(name("a", i), []byte("v0")))
	}
	commit(t, kv, ops...)
	ops = ops[:0]
	for i := range 50 {
		ops = append(ops, store.Put(name("a", i), []byte("v1")))
	}
	commit(t, kv, ops...)

	ops = ops[:0]
	for i := range 50 {
		ops = append(ops, store.Set(name("a", i), []byte("s"), 1),
			store.Check(name("a", 50+i), 0),
			store.Delete(name("a", 100+i), store.AnyVersion))
	}
	for j := range 30 {
		ops = append(ops, store.Create(name("b", j), []byte("b")))
	}
	for j := range 10 {
		ops = append(ops, store.Delete(name("missing", j), store.AnyVersion), store.Put(name("c", j), []byte("c")))
	}
	commit(t, kv, ops...)
	wantNode(t, kv, name("a", 0), "s", 2)
	wantNode(t, kv, name("a", 49), "s", 2)
	wantNode(t, kv, name("a", 99), "v0", 0)
	wantMissing(t, kv, name("a", 100))
	wantMissing(t, kv, name("a", 149))
	wantNode(t, kv, name("b", 29), "b", 0)
	wantNode(t, kv, name("c", 9), "c", 0)
	before := children(t, kv, "/big")
	if len(before) != 140 {
		t.Fatalf("Children(/big) = %d nodes, want 140", len(before))
	}

	for _, f := range []struct {
		name string
		op   store.Op
		err  error
	}{
		{"Conflict", store.Set(name("a", 0), nil, 7), store.ErrConflict},
		{"Exists", store.Create(name("a", 50), nil), store.ErrExists},
		{"CheckMissing", store.Check(name("a", 100), store.AnyVersion), store.ErrNotFound},
		{"DeleteVersion", store.Delete(name("a", 51), 3), store.ErrConflict},
	} {
		t.Run(f.name, func(t *testing.T) {
			ops := ops[:0]
			for i := range 170 {
				ops = append(ops, store.Put(name("d", i), []byte("d")))
			}
			ops = append(ops, f.op)
			for i := range 29 {
				ops = append(ops, store.Put(name("e", i), []byte("e")))
			}
			commitErr(t, kv, f.err, ops...)
			wantNode(t, kv, name("a", 0), "s", 2)
			wantMissing(t, kv, name("d", 0))
			wantMissing(t, kv, name("e", 28))
			equal(t, "Children(/big)", children(t, kv, "/big"), before)
		})
	}
}
