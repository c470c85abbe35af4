package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/storetest"
)

// TestConformance runs the store suite on one embedded member, each
// subtest in a prefix of its own.
func TestConformance(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	storetest.Run(t, func(t *testing.T) store.KV { return openStore(t, m.Endpoints(), Options{}) })
}

// TestConformanceCluster runs the suite on a 3-member cluster: every
// commit and read goes through one member, every watch through another.
func TestConformanceCluster(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		w := openStore(t, ms[0].Endpoints(), Options{})
		r := openStore(t, ms[2].Endpoints(), Options{Prefix: w.k.prefix})
		return split{Store: w, watcher: r}
	}, storetest.Options{ManyChildren: 3000, SlowEvents: 3000, Timeout: 20 * time.Second})
}

// TestConformanceSmallTxn runs the suite with a cap of 16 operations per
// transaction, so that commits are nested and chained all through it.
func TestConformanceSmallTxn(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		return openStore(t, m.Endpoints(), Options{MaxTxnOps: 16})
	}, storetest.Options{ManyChildren: 2000, SlowEvents: 2000})
}

// revisions is the set of mod revisions of the keys under the store's nodes.
func revisions(t *testing.T, s *Store) map[int64]int {
	t.Helper()
	resp, err := s.cli.Get(t.Context(), s.k.nodes, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	for _, kv := range resp.Kvs {
		out[kv.ModRevision]++
	}
	return out
}

// TestLargeCommit: past 128 operations a commit is nested transactions in
// one etcd transaction (one revision), past what one can hold a chain;
// the chain stops at a commit that comes between two of its links.
func TestLargeCommit(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	puts := func(dir string, n int) []store.Op {
		ops := make([]store.Op, n)
		for i := range ops {
			ops[i] = store.Put(fmt.Sprintf("/%s/%05d", dir, i), []byte("v"))
		}
		return ops
	}
	ctx := t.Context()

	s := openStore(t, m.Endpoints(), Options{})
	if err := s.Commit(ctx, puts("a", 1000)...); err != nil {
		t.Fatal(err)
	}
	if revs := revisions(t, s); len(revs) != 1 {
		t.Fatalf("1,000 puts (and their parent) in %d revisions, want 1: %v", len(revs), revs)
	}
	if err := s.Commit(ctx, puts("b", 5000)...); err != nil {
		t.Fatal(err)
	}
	if revs := revisions(t, s); len(revs) != 3 {
		t.Fatalf("then 5,000 puts: %d revisions in all, want 3 (one, then a chain of two): %v", len(revs), revs)
	}
	names, err := s.Children(ctx, "/b")
	if err != nil || len(names) != 5000 {
		t.Fatalf("Children(/b) = %d names, %v", len(names), err)
	}

	// A failing op far into a chained commit writes nothing: the plan
	// fails before any transaction is sent.
	small := openStore(t, m.Endpoints(), Options{MaxTxnOps: 8})
	ops := append(puts("c", 300), store.Check("/missing", store.AnyVersion))
	if err := small.Commit(ctx, ops...); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("commit with a failing last op: %v", err)
	}
	if revs := revisions(t, small); len(revs) != 0 {
		t.Fatalf("a failed commit wrote: %v", revs)
	}
	if err := small.Commit(ctx, puts("c", 300)...); err != nil {
		t.Fatal(err)
	}
	if revs := revisions(t, small); len(revs) < 10 {
		t.Fatalf("300 puts with 8 ops a transaction: %d revisions, want a chain of at least 10", len(revs))
	}

	// A chain holds the guard: a commit sent between two of its links
	// waits for the whole chain.
	other := openStore(t, m.Endpoints(), Options{Prefix: small.k.prefix})
	between := make(chan error, 1)
	small.afterChunk = func(i int) {
		if i == 1 {
			go func() { between <- other.Commit(ctx, store.Put("/between", nil)) }()
		}
	}
	if err := small.Commit(ctx, puts("d", 300)...); err != nil {
		t.Fatalf("chain with a commit sent between its links: %v", err)
	}
	if err := <-between; err != nil {
		t.Fatal(err)
	}
	resp, err := small.cli.Get(ctx, small.k.nodes, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var chainEnd, betweenRev int64
	for _, kv := range resp.Kvs {
		switch p := small.k.path(string(kv.Key)); {
		case p == "/between":
			betweenRev = kv.ModRevision
		case store.Under(p, "/d"):
			chainEnd = max(chainEnd, kv.ModRevision)
		}
	}
	if betweenRev <= chainEnd {
		t.Fatalf("the commit sent between the links applied at revision %d, inside the chain (last link %d)", betweenRev, chainEnd)
	}
}

// TestWatchCompacted: a watch whose next revision was compacted away
// reports one EventResync and goes on from the compaction.
func TestWatchCompacted(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	s := openStore(t, m.Endpoints(), Options{})
	ctx := t.Context()
	if err := s.Commit(ctx, store.Put("/w/a", nil)); err != nil {
		t.Fatal(err)
	}
	resp, err := s.cli.Get(ctx, s.k.guard)
	if err != nil {
		t.Fatal(err)
	}
	old := resp.Header.Revision
	for i := range 3 {
		if err := s.Commit(ctx, store.Put("/w/a", []byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	resp, _ = s.cli.Get(ctx, s.k.guard)
	if _, err := s.cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	out := make(chan store.Event)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.pump(wctx, "/w", old, out) }()
	defer func() { cancel(); <-done }()
	next := func() store.Event {
		select {
		case ev := <-out:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return store.Event{}
	}
	if ev := next(); ev.Type != store.EventResync || ev.Path != "/w" {
		t.Fatalf("first event %+v, want a resync of /w", ev)
	}
	if err := s.Commit(ctx, store.Put("/w/b", nil)); err != nil {
		t.Fatal(err)
	}
	for {
		ev := next()
		if ev.Path == "/w/b" {
			break
		}
		if ev.Path != "/w/a" { // the compaction's own revision may come first
			t.Fatalf("event %+v", ev)
		}
	}
}

// TestConformanceExternal runs the suite on an external cluster when
// EJ_TEST_ETCD names its endpoints (comma-separated client URLs).
func TestConformanceExternal(t *testing.T) {
	eps := os.Getenv("EJ_TEST_ETCD")
	if eps == "" {
		t.Skip("EJ_TEST_ETCD not set (the embedded members' tests reach them through their client URLs the same way)")
	}
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		return openStore(t, strings.Split(eps, ","), Options{Prefix: fmt.Sprintf("/ejtest/%d-%d", time.Now().UnixNano(), prefixSeq.Add(1))})
	}, storetest.Options{ManyChildren: 2000, SlowEvents: 2000, Timeout: 20 * time.Second})
}

// TestWatchFailover: a watch through a client of two members goes on,
// with nothing missed, after one of them (possibly the leader) is killed.
func TestWatchFailover(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	ctx := t.Context()
	w := openStore(t, append(ms[0].Endpoints(), ms[1].Endpoints()...), Options{})
	writer := openStore(t, ms[2].Endpoints(), Options{Prefix: w.k.prefix})
	if err := writer.Commit(ctx, store.Create("/f", nil)); err != nil {
		t.Fatal(err)
	}
	ch, err := w.Watch(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for i := range 3 {
		p := fmt.Sprintf("/f/before%d", i)
		if err := writer.Commit(ctx, store.Put(p, nil)); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	start := time.Now()
	ms[0].Kill()
	t.Logf("killed in %v", time.Since(start))
	for i := range 3 {
		p := fmt.Sprintf("/f/after%d", i)
		if err := writer.Commit(ctx, store.Put(p, nil)); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	for i, p := range want {
		select {
		case ev := <-ch:
			if ev.Type != store.EventPut || ev.Path != p {
				t.Fatalf("event %d = %+v, want a put of %s", i, ev, p)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no event %d (%s) after the kill", i, p)
		}
	}
	t.Logf("every event %v after the kill", time.Since(start))
}

// TestFenceAcrossMembers: a write conditional on a leadership node (the
// contract's Check) made through one member is refused once another
// member's client has moved that node on.
func TestFenceAcrossMembers(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	ctx := t.Context()
	a := openStore(t, ms[0].Endpoints(), Options{})
	b := openStore(t, ms[1].Endpoints(), Options{Prefix: a.k.prefix})
	if err := a.Commit(ctx, store.Create("/leader", []byte("a"))); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, store.Check("/leader", 0), store.Put("/state/x", []byte("a"))); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, store.Set("/leader", []byte("b"), 0)); err != nil {
		t.Fatal(err)
	}
	err := a.Commit(ctx, store.Check("/leader", 0), store.Put("/state/x", []byte("stale")))
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("fenced write after the term moved: %v, want ErrConflict", err)
	}
	if n, err := b.Get(ctx, "/state/x"); err != nil || string(n.Value) != "a" {
		t.Fatalf("Get(/state/x) = %q, %v; want the first term's write", n.Value, err)
	}
}

// TestGuardedCommitsUnderLoad: commits too big for per-key compares
// apply while small commits stream in (they take the guard after losing
// twice to them), and the small commits go on.
func TestGuardedCommitsUnderLoad(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	kv := openStore(t, m.Endpoints(), Options{})
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var small atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				err := kv.Commit(ctx, store.Put(fmt.Sprintf("/s%d/%d", w, n%50), []byte("x")))
				if err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
				small.Add(1)
			}
		})
	}
	for i := range 10 {
		ops := make([]store.Op, 300)
		for j := range ops {
			ops[j] = store.Put(fmt.Sprintf("/big/%d/%03d", i%3, j), []byte("y"))
		}
		if err := kv.Commit(t.Context(), ops...); err != nil {
			t.Fatalf("big commit %d: %v", i, err)
		}
	}
	stop()
	wg.Wait()
	if small.Load() == 0 {
		t.Fatal("no small commit applied meanwhile")
	}
	t.Logf("%d small commits meanwhile", small.Load())
}

// TestEmbeddedCapCommitsFlat: on a member run with EmbeddedMaxTxnOps (the
// scheduler's own), a commit the size of a fire instant at 100,000 jobs
// (2,000 entries and the leader's fence) beside a stream of small commits
// is one flat transaction: it never contends for the guard, so it neither
// loses to the small commits nor makes them wait. The fence still holds:
// once the checked node changes, the same commit writes nothing.
func TestEmbeddedCapCommitsFlat(t *testing.T) {
	cfg := memberConfigs(t, 1)
	cfg[0].MaxTxnOps = EmbeddedMaxTxnOps
	m := startMembers(t, cfg)[0]
	kv := openStore(t, m.Endpoints(), Options{MaxTxnOps: EmbeddedMaxTxnOps})
	if err := kv.Commit(t.Context(), store.Put("/term", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	fence := store.Check("/term", 0) // as created
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				if err := kv.Commit(ctx, store.Put(fmt.Sprintf("/s%d/%d", w, n%50), []byte("x"))); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	fire := func(i int) []store.Op {
		ops := make([]store.Op, 0, 2001)
		for j := range 2000 {
			ops = append(ops, store.Put(fmt.Sprintf("/ready/%d/%04d", i%3, j), []byte("fire")))
		}
		return append(ops, fence)
	}
	for i := range 5 {
		if err := kv.Commit(t.Context(), fire(i)...); err != nil {
			t.Fatalf("fire commit %d: %v", i, err)
		}
	}
	stop()
	wg.Wait()
	for _, shape := range []string{shapeGuarded, shapeLost, shapeLocked, shapeWaited} {
		if n := testutilCount(kv, shape); n != 0 {
			t.Errorf("%s: %v, want 0: a commit of 2,000 ops went through the guard", shape, n)
		}
	}
	if err := kv.Commit(t.Context(), store.Put("/term", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	before := revisions(t, kv)
	if err := kv.Commit(t.Context(), fire(9)...); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a fire commit whose fence moved: %v, want ErrConflict", err)
	}
	if after := revisions(t, kv); len(after) != len(before) {
		t.Fatalf("the fenced-off commit wrote: %d revisions before, %d after", len(before), len(after))
	}
}

// testutilCount is the count of commit transactions of shape.
func testutilCount(s *Store, shape string) float64 {
	var m dto.Metric
	if err := s.shapes.WithLabelValues(shape).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
