package etcd

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
)

// TestCommitReport: the events of a commit are each node it wrote or
// deleted once, in its final state (the version a Get finds), at the
// commit's revision.
func TestCommitReport(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	s := openStore(t, nil, Options{Member: m, LocalPlans: true})
	ctx := t.Context()
	if err := s.Commit(ctx, store.Put("/a/x", []byte("0")), store.Put("/gone/y", nil)); err != nil {
		t.Fatal(err)
	}
	evs, err := s.CommitReport(ctx, store.Put("/a/x", []byte("1")), store.Put("/a/x", []byte("2")),
		store.Create("/b/c", []byte("new")), store.Delete("/gone", store.AnyVersion), store.Check("/a", store.AnyVersion))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		typ     store.EventType
		version int64
		value   string
	}
	wants := map[string]want{"/a/x": {store.EventPut, 2, "2"}, "/b": {store.EventPut, 0, ""}, "/b/c": {store.EventPut, 0, "new"},
		"/gone": {store.EventDelete, 0, ""}}
	if len(evs) != len(wants) {
		t.Fatalf("events %+v, want one for each of %v", evs, wants)
	}
	for _, ev := range evs {
		w, ok := wants[ev.Path]
		if !ok || ev.Type != w.typ || ev.Version != w.version || string(ev.Value) != w.value || ev.Revision != rev {
			t.Errorf("event %+v, want %+v at revision %d", ev, w, rev)
		}
		if ev.Type == store.EventPut {
			if n, err := s.Get(ctx, ev.Path); err != nil || n.Version != ev.Version {
				t.Errorf("Get(%s) = v%d, %v; the event says v%d", ev.Path, n.Version, err, ev.Version)
			}
		}
	}
	if evs, err := s.CommitReport(ctx, store.Check("/a/x", 2)); err != nil || len(evs) != 0 {
		t.Errorf("a commit of checks only: events %v, %v; want none", evs, err)
	}
}

// countingStore counts the reads of single nodes made through it, but
// of path skip.
type countingStore struct {
	*Store
	skip string
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, path string) (store.Node, error) {
	if path != c.skip {
		c.gets.Add(1)
	}
	return c.Store.Get(ctx, path)
}

func (c *countingStore) GetAt(ctx context.Context, path string) (store.Node, int64, error) {
	if path != c.skip {
		c.gets.Add(1)
	}
	return c.Store.GetAt(ctx, path)
}

// TestCacheTakesBlindPutsFromTheReport: a registry cache on the store
// learns the version a blind put wrote from the commit's report, in a
// commit and in a chain of batches, with no read of the node back
// (before: a linearizable read per put, waited for by the committing
// loop), and reads its writes.
func TestCacheTakesBlindPutsFromTheReport(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	// The refused check's node is read back, on purpose (a stale copy of
	// it would refuse every retry): not a blind put's.
	back := &countingStore{Store: openStore(t, nil, Options{Member: m, LocalPlans: true}), skip: "/state/missing"}
	c, err := cache.Open(t.Context(), back, cache.Options{Roots: []string{"/state"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	before := back.gets.Load()
	for i := range 3 {
		if err := c.Commit(ctx, store.Put("/state/running/j/0", []byte{byte('a' + i)}), store.Put("/state/ready/j", nil)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Get(ctx, "/state/running/j/0")
		if err != nil || n.Version != int64(i) || n.Value[0] != byte('a'+i) {
			t.Fatalf("commit %d: cache Get = %q v%d, %v; want v%d", i, n.Value, n.Version, err, i)
		}
	}
	// A chain of batches (the status path's), whole and batch by batch
	// (the first attempt fails on its last batch's check).
	for _, batches := range [][][]store.Op{
		{{store.Put("/state/running/k/0", []byte("x"))}, {store.Put("/state/running/k/1", []byte("y"))}},
		{{store.Put("/state/running/k/0", []byte("z"))}, {store.Check("/state/missing", store.AnyVersion)}},
	} {
		applied, _, err := c.CommitChain(ctx, nil, "", batches)
		if applied < 1 || (err == nil) != (applied == len(batches)) {
			t.Fatalf("CommitChain: %d applied, %v", applied, err)
		}
	}
	if n, err := c.Get(ctx, "/state/running/k/0"); err != nil || n.Version != 1 || string(n.Value) != "z" {
		t.Fatalf("after the chains: cache Get = %q v%d, %v; want \"z\" v1", n.Value, n.Version, err)
	}
	if n := back.gets.Load() - before; n != 0 {
		t.Errorf("the cache read %d nodes back after blind puts, want 0", n)
	}
}

// revisionedOnly is a store that is store.Revisioned but no
// store.Reporter: the cache's path before commits reported what they
// wrote.
type revisionedOnly struct {
	store.KV
	rv store.Revisioned
}

func (r revisionedOnly) GetAt(ctx context.Context, path string) (store.Node, int64, error) {
	return r.rv.GetAt(ctx, path)
}

func (r revisionedOnly) CommitAt(ctx context.Context, ops ...store.Op) (int64, error) {
	return r.rv.CommitAt(ctx, ops...)
}

func (r revisionedOnly) Revision(ctx context.Context) (int64, error) { return r.rv.Revision(ctx) }

// BenchmarkCachedLaunchCommit is launchRounds through the registry's
// cache (of /state) on a store calling a follower of 3 members
// in-process, as the leader commits: the cache reading each blind put's
// node back after the commit (reread) or taking its version from the
// commit's report (report).
func BenchmarkCachedLaunchCommit(b *testing.B) {
	for _, report := range []bool{false, true} {
		name := "reread"
		if report {
			name = "report"
		}
		b.Run(name, func(b *testing.B) {
			on := follower(startMembers(b, embeddedConfigs(b, 3)))
			s := openStore(b, nil, Options{MaxTxnOps: EmbeddedMaxTxnOps, Member: on, LocalPlans: true})
			var back store.KV = s
			if !report {
				back = revisionedOnly{KV: s, rv: s}
			}
			c, err := cache.Open(b.Context(), back, cache.Options{Roots: []string{"/state"}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			launchRounds(b, c, 0)
		})
	}
}
