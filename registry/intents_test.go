package registry

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// fenced is a registry whose writes are fenced by an election node, as a
// leader's are, and the store under it.
func fenced(t *testing.T) (*Registry, store.KV) {
	t.Helper()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	if err := kv.Commit(t.Context(), store.Put("/ha/election/n-1", nil)); err != nil {
		t.Fatal(err)
	}
	r := New(kv)
	r.fence = func() []store.Op { return []store.Op{store.Check("/ha/election/n-1", store.AnyVersion)} }
	return r, kv
}

func depose(t *testing.T, kv store.KV) {
	t.Helper()
	if err := kv.Commit(t.Context(), store.Delete("/ha/election/n-1", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
}

// Log tails: kept and forgotten in one fenced commit, at the layout's
// /kube/logs/{job}/{taskId}, in each namespace's own tree; a deposed
// leader keeps none.
func TestLogTails(t *testing.T) {
	r, kv := fenced(t)
	ctx := t.Context()
	if err := r.Work().WriteLogTails(ctx, []TailWrite{{Job: "j", TaskID: "t1", Tail: []byte(`{"stdout":"1"}`)},
		{Job: "j", TaskID: "t2", Tail: []byte(`{"stdout":"2"}`)}, {Job: "pay~j", TaskID: "pay~j@-@0@-@READY@-@a@-@u", Tail: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Work().WriteLogTails(ctx, []TailWrite{{Job: "j", TaskID: "t1"}}); err != nil {
		t.Fatal(err)
	}
	ids, err := r.Work().LogTails(ctx, "j")
	if err != nil || len(ids) != 1 || ids[0] != "t2" {
		t.Fatalf("tails of j = %v, %v; want [t2]", ids, err)
	}
	if b, err := r.Work().LogTail(ctx, "j", "t2"); err != nil || string(b) != `{"stdout":"2"}` {
		t.Fatalf("tail t2 = %q, %v", b, err)
	}
	if _, err := r.Work().LogTail(ctx, "j", "t1"); !errors.Is(err, ErrTailNotFound) {
		t.Fatalf("a forgotten tail: %v, want ErrTailNotFound", err)
	}
	if _, err := kv.Get(ctx, "/kube/logs/j/t2"); err != nil {
		t.Fatalf("the layout moved: %v", err)
	}
	if _, err := kv.Get(ctx, "/namespaces/pay/kube/logs/j/j@-@0@-@READY@-@a@-@u"); err != nil {
		t.Fatalf("a namespace's tail is not in its tree: %v", err)
	}
	if b, err := r.In("pay").Work().LogTail(ctx, "j", "j@-@0@-@READY@-@a@-@u"); err != nil || string(b) != "{}" {
		t.Fatalf("namespace pay's tail through its view = %q, %v", b, err)
	}
	depose(t, kv)
	if err := r.Work().WriteLogTails(ctx, []TailWrite{{Job: "j", TaskID: "t3", Tail: []byte(`{}`)}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a deposed leader's tail: %v, want ErrFenced", err)
	}
}

// The term's record is written behind the fence, at LeaderTermPath,
// through the barrier it is given.
func TestBeginTerm(t *testing.T) {
	r, kv := fenced(t)
	ctx := t.Context()
	var at string
	barrier := func(ctx context.Context, path string, value []byte, commit func(context.Context, ...store.Op) error) error {
		at = path
		return commit(ctx, store.Put(path, value))
	}
	if err := r.Term().BeginTerm(ctx, []byte(`{"term":1}`), barrier); err != nil {
		t.Fatal(err)
	}
	if n, err := kv.Get(ctx, "/state/leader_term"); err != nil || at != "/state/leader_term" || string(n.Value) != `{"term":1}` {
		t.Fatalf("term record %v at %s: %v", n, at, err)
	}
	depose(t, kv)
	if err := r.Term().BeginTerm(ctx, []byte(`{"term":2}`), barrier); !errors.Is(err, ErrFenced) {
		t.Fatalf("a term begun without the election node: %v, want ErrFenced", err)
	}
}

// The package key cell: created once (the first instance wins), read by
// every instance, not fenced (a standby creates it too), outside every
// namespace.
func TestPackageKeyCell(t *testing.T) {
	r, kv := fenced(t)
	ctx := t.Context()
	depose(t, kv) // not leading: the cell is still written
	c := r.In("pay").Term().PackageKey()
	if _, ok, err := c.Get(ctx); ok || err != nil {
		t.Fatalf("a new registry's key: ok %v, %v", ok, err)
	}
	if created, err := c.Create(ctx, []byte("k1")); !created || err != nil {
		t.Fatalf("first create: %v, %v", created, err)
	}
	if created, err := r.Term().PackageKey().Create(ctx, []byte("k2")); created || err != nil {
		t.Fatalf("second create: %v, %v; want not created", created, err)
	}
	if v, ok, err := r.Term().PackageKey().Get(ctx); !ok || err != nil || !bytes.Equal(v, []byte("k1")) {
		t.Fatalf("key = %q %v %v, want the first instance's", v, ok, err)
	}
	if n, err := kv.Get(ctx, "/packages/key"); err != nil || string(n.Value) != "k1" {
		t.Fatalf("the key moved: %v %v", n, err)
	}
}

// WatchApps reports an app's publication with the app's path.
func TestWatchApps(t *testing.T) {
	r, ctx := setup(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev, err := r.WatchApps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Config().SetDisabled(ctx, "app", "app", true, t0); err != nil { // not an app change: not reported
		t.Fatal(err)
	}
	a, err := r.Config().App(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	a.AppName = "app2"
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for e := range ev {
		if e.Kind != ConfigApp || (e.Name != "app" && e.Name != "app2") {
			t.Fatalf("a change outside the apps: %+v", e)
		}
		if e.Name == "app2" {
			return
		}
	}
	t.Fatal("the watch ended without the new app")
}
