package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// countingEtcd counts the standby's reads of single nodes.
type countingEtcd struct {
	*etcd.Store
	gets atomic.Int64
}

func (s *countingEtcd) Get(ctx context.Context, p string) (store.Node, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, p)
}

func (s *countingEtcd) GetAt(ctx context.Context, p string) (store.Node, int64, error) {
	s.gets.Add(1)
	return s.Store.GetAt(ctx, p)
}

// TestStandbyCacheFollowsWithoutReads: a standby's cache on one member
// follows another process's commits on another member (puts, subtree
// deletes, a subtree deleted and written under again in one commit)
// from the watch events alone, and ends equal to the store; its own
// commits read back as written.
func TestStandbyCacheFollowsWithoutReads(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	eps := cl.Endpoints()
	open := func(ep string) *etcd.Store {
		s, err := etcd.Open(t.Context(), etcd.Options{Endpoints: []string{ep}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	writer := open(eps[0])
	t.Cleanup(func() { _ = writer.Close() })
	back := &countingEtcd{Store: open(eps[1])}
	c, err := cache.Open(t.Context(), back, cache.Options{Roots: []string{"/state"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	w, err := c.Watch(t.Context(), "/state/end")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(kv store.KV, ops ...store.Op) {
		t.Helper()
		if err := kv.Commit(t.Context(), ops...); err != nil {
			t.Fatal(err)
		}
	}
	before := back.gets.Load()
	for i := range 60 {
		commit(writer, store.Put(fmt.Sprintf("/state/r/x%d", i%9), fmt.Appendf(nil, "%d", i)), store.Put("/state/k", fmt.Appendf(nil, "%d", i)))
		if i%6 == 5 {
			commit(writer, store.Delete("/state/r", store.AnyVersion), store.Create("/state/r/again", []byte("a")))
		}
		if i%20 == 19 {
			commit(writer, store.Delete("/state/r", store.AnyVersion))
		}
	}
	commit(writer, store.Put("/state/end", nil))
	for ev := range w {
		if ev.Type == store.EventPut {
			break
		}
	}
	if n := back.gets.Load() - before; n != 0 {
		t.Fatalf("the standby read %d nodes to follow another process", n)
	}
	same(t, c, writer, "/state")
	for i := range 20 { // its own writes, mixed with the other writer's
		v := fmt.Appendf(nil, "own%d", i)
		commit(writer, store.Put("/state/own/o", []byte("theirs")), store.Put("/state/own/z", nil))
		commit(c, store.Delete("/state/own", store.AnyVersion), store.Create("/state/own/o", v))
		if n, err := c.Get(t.Context(), "/state/own/o"); err != nil || string(n.Value) != string(v) {
			t.Fatalf("own write %d read back as %q, %v", i, n.Value, err)
		}
		if kids, _ := c.Children(t.Context(), "/state/own"); len(kids) != 1 {
			t.Fatalf("own write %d: children %v", i, kids)
		}
	}
	commit(writer, store.Put("/state/end", []byte("2")))
	for ev := range w {
		if ev.Type == store.EventPut && ev.Version == 1 {
			break
		}
	}
	same(t, c, writer, "/state")
}

func same(t *testing.T, c, back store.KV, p string) {
	t.Helper()
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
		same(t, c, back, store.Join(p, k))
	}
}
