package cache_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/sqlite"
	"github.com/ejcloud/elasticjob/store/storetest"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

func openCache(t *testing.T, back store.KV, roots ...string) *cache.KV {
	t.Helper()
	c, err := cache.Open(t.Context(), back, cache.Options{Roots: roots, StrictWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConformanceMemory(t *testing.T) {
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		return openCache(t, memory.New())
	}, storetest.Options{PerPathOrder: true})
}

func TestConformanceSQLite(t *testing.T) {
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		back, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "r.db"), sqlite.Options{Sync: sqlite.SyncNormal})
		if err != nil {
			t.Fatal(err)
		}
		return openCache(t, back)
	}, storetest.Options{PerPathOrder: true, ManyChildren: 2000, SlowEvents: 2000})
}

// TestSeesOtherWriters: a write made to the backing store by someone else
// reaches the copy, and the cache's watcher hears of it only once the copy
// has it.
func TestSeesOtherWriters(t *testing.T) {
	back := memory.New()
	ctx := t.Context()
	mustCommit(t, back, store.Create("/config/job/a", []byte("1")), store.Create("/ha/x", nil))
	c := openCache(t, back, "/config", "/state")
	if n, err := c.Get(ctx, "/config/job/a"); err != nil || string(n.Value) != "1" {
		t.Fatalf("loaded copy: %+v %v", n, err)
	}
	ch, err := c.Watch(ctx, "/config/job")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		mustCommit(t, back, store.Put("/config/job/a", fmt.Appendf(nil, "v%d", i)))
		ev := next(t, ch)
		n, err := c.Get(ctx, ev.Path)
		if err != nil || n.Version < ev.Version {
			t.Fatalf("event %+v but the copy holds %+v (%v)", ev, n, err)
		}
	}
	mustCommit(t, back, store.Delete("/config/job", store.AnyVersion))
	if ev := next(t, ch); ev.Type != store.EventDelete {
		t.Fatalf("got %+v, want a delete", ev)
	}
	for {
		if _, err := c.Get(ctx, "/config/job"); errors.Is(err, store.ErrNotFound) {
			break
		}
		next(t, ch)
	}
	if names, _ := c.Children(ctx, "/config"); len(names) != 0 {
		t.Fatalf("children of /config after delete: %v", names)
	}
	// Outside the roots: passed through.
	if _, err := c.Get(ctx, "/ha/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watch(ctx, "/"); !errors.Is(err, store.ErrBadPath) {
		t.Fatalf("watch enclosing a root: %v", err)
	}
}

// TestReadsOwnWrites: after Commit returns, reads through the cache see it,
// also when a conditional commit lost to another writer.
func TestReadsOwnWrites(t *testing.T) {
	back := memory.New()
	c := openCache(t, back, "/state")
	ctx := t.Context()
	for i := range 200 {
		p := fmt.Sprintf("/state/ready/j%d", i%7)
		mustCommit(t, c, store.Put(p, fmt.Appendf(nil, "%d", i)))
		n, err := c.Get(ctx, p)
		if err != nil || string(n.Value) != fmt.Sprint(i) {
			t.Fatalf("after commit %d: %+v %v", i, n, err)
		}
	}
	// The version is read before the write behind the cache's back: read
	// after it, it is stale only until the cache's watch applies that write,
	// and the commit then rightly succeeds (a race the test lost under load).
	n, _ := c.Get(ctx, "/state/ready/j0")
	mustCommit(t, back, store.Put("/state/ready/j0", []byte("other"))) // behind the cache's back
	err := c.Commit(ctx, store.Set("/state/ready/j0", []byte("mine"), n.Version))
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale conditional commit: %v", err)
	}
	if n, _ := c.Get(ctx, "/state/ready/j0"); string(n.Value) != "other" {
		t.Fatalf("after a lost race the copy holds %q, want the winner's value", n.Value)
	}
}

// TestConcurrentWritersConverge: many writers through the cache and behind
// its back; afterwards the copy equals the backing store.
func TestConcurrentWritersConverge(t *testing.T) {
	back := memory.New()
	c := openCache(t, back, "/state")
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			kv := store.KV(c)
			if w%2 == 0 {
				kv = back
			}
			for i := range 300 {
				p := fmt.Sprintf("/state/running/j%d/s%d", i%5, i%3)
				if i%4 == 3 {
					_ = kv.Commit(context.Background(), store.Delete(store.Parent(p), store.AnyVersion))
					continue
				}
				_ = kv.Commit(context.Background(), store.Put(p, fmt.Appendf(nil, "%d-%d", w, i)))
			}
		})
	}
	wg.Wait()
	// Events of different paths may arrive in any order: compare after each
	// one until the copy matches (the failure deadline is in next).
	ch, _ := c.Watch(t.Context(), "/state")
	mustCommit(t, back, store.Put("/state/marker", nil))
	for !sameTrees(t, back, c, "/state") {
		next(t, ch)
	}
}

func TestRefreshAllAndCollect(t *testing.T) {
	back := memory.New()
	c := openCache(t, back, "/config")
	ctx, col := cache.Collect(t.Context())
	if err := c.Commit(ctx, store.Create("/config/app/a", []byte("x")), store.Check("/config/app/a", 0)); err != nil {
		t.Fatal(err)
	}
	if paths, over := col.Paths(); over || len(paths) != 1 || paths[0] != "/config/app/a" {
		t.Fatalf("collected %v %v", paths, over)
	}
	if err := c.Commit(ctx, store.Create("/config/app/b", nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, store.Create("/config/app/b", nil)); err == nil {
		t.Fatal("second create succeeded")
	}
	if paths, _ := col.Paths(); len(paths) != 2 {
		t.Fatalf("a failed commit was collected: %v", paths)
	}
	mustCommit(t, back, store.Put("/config/app/c", []byte("behind")))
	if err := c.RefreshAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	equalTrees(t, back, c, "/config")
}

func mustCommit(t *testing.T, kv store.KV, ops ...store.Op) {
	t.Helper()
	if err := kv.Commit(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within the failure deadline")
	}
	return store.Event{}
}

func sameTrees(t *testing.T, want, got store.KV, p string) bool {
	t.Helper()
	ctx := t.Context()
	a, errA := want.Get(ctx, p)
	b, errB := got.Get(ctx, p)
	if (errA == nil) != (errB == nil) || string(a.Value) != string(b.Value) || a.Version != b.Version {
		return false
	}
	ka, _ := want.Children(ctx, p)
	kb, _ := got.Children(ctx, p)
	if fmt.Sprint(ka) != fmt.Sprint(kb) {
		return false
	}
	for _, k := range ka {
		if !sameTrees(t, want, got, store.Join(p, k)) {
			return false
		}
	}
	return true
}

func equalTrees(t *testing.T, want, got store.KV, p string) {
	t.Helper()
	ctx := t.Context()
	a, errA := want.Get(ctx, p)
	b, errB := got.Get(ctx, p)
	if (errA == nil) != (errB == nil) || string(a.Value) != string(b.Value) || a.Version != b.Version {
		t.Fatalf("%s: backing %+v (%v), cache %+v (%v)", p, a, errA, b, errB)
	}
	ka, _ := want.Children(ctx, p)
	kb, _ := got.Children(ctx, p)
	if fmt.Sprint(ka) != fmt.Sprint(kb) {
		t.Fatalf("children of %s: backing %v, cache %v", p, ka, kb)
	}
	for _, k := range ka {
		equalTrees(t, want, got, store.Join(p, k))
	}
}

// TestConformanceZooKeeper: the cache over the ZooKeeper store, as cluster
// mode runs it (EJ_TEST_ZK; skipped without it, except in CI).
func TestConformanceZooKeeper(t *testing.T) {
	servers := testproxy.ZK(t)
	var n atomic.Int64
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		back, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(servers, ","),
			Namespace: fmt.Sprintf("ejtest/cache-%d-%d", time.Now().UnixNano(), n.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		return openCache(t, back)
	}, storetest.Options{PerPathOrder: true, ManyChildren: 2000, SlowEvents: 2000, Timeout: 20 * time.Second})
}

// gatedKV holds one Get of a path made with the gate's context value (the
// commit's own re-read) until released, and every Get of hold (the watch
// following the commit's other path) until then too, to look at the copy
// in the middle of the commit's own apply.
type gatedKV struct {
	store.KV
	path, hold string
	reached    chan struct{}
	release    chan struct{}
	armed      atomic.Bool // the commit's re-read of path is still to be held
	holding    atomic.Bool // Gets of hold wait for release
}

type gateKey struct{}

func (g *gatedKV) Get(ctx context.Context, p string) (store.Node, error) {
	switch {
	case p == g.path && ctx.Value(gateKey{}) != nil && g.armed.CompareAndSwap(true, false):
		close(g.reached)
		<-g.release
	case p == g.hold && g.holding.Load():
		<-g.release
	}
	return g.KV.Get(ctx, p)
}

// TestBlindPutsShowBeforeTheRestOfACommit: a commit that deletes one path
// and blindly puts another (a run's shard ends and its record is marked
// done) shows the delete only once the put is in the copy, so a reader
// never finds the shard gone and the record not yet done.
func TestBlindPutsShowBeforeTheRestOfACommit(t *testing.T) {
	back := &gatedKV{KV: memory.New(), path: "/state/runs/j", hold: "/state/running/j/0",
		reached: make(chan struct{}), release: make(chan struct{})}
	ctx := t.Context()
	mustCommit(t, back.KV, store.Create("/state/running/j/0", []byte("task")), store.Create("/state/runs/j", []byte("running")))
	c := openCache(t, back, "/state")
	back.armed.Store(true)
	back.holding.Store(true)
	var once sync.Once
	open := func() { once.Do(func() { close(back.release) }) }
	t.Cleanup(open) // never leave the commit blocked
	done := make(chan error, 1)
	go func() {
		done <- c.Commit(context.WithValue(ctx, gateKey{}, true),
			store.Delete("/state/running/j/0", store.AnyVersion), store.Put("/state/runs/j", []byte("done")))
	}()
	<-back.reached // the commit is applied in the store; the copy re-reads the put
	_, err := c.Get(ctx, "/state/running/j/0")
	open()
	if err != nil {
		t.Fatalf("the delete is visible before the put: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(ctx, "/state/runs/j"); err != nil || string(n.Value) != "done" {
		t.Fatalf("record %+v %v", n, err)
	}
	if _, err := c.Get(ctx, "/state/running/j/0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("running shard after the commit: %v", err)
	}
}

type commitKey struct{}

// reporter is a store that reports what its commits wrote.
type reporter interface {
	store.KV
	store.Reporter
}

// reportingKV counts the Gets made on behalf of a commit (its context
// carries commitKey) over a store.Reporter.
type reportingKV struct {
	reporter
	gets atomic.Int64
}

func (r *reportingKV) Get(ctx context.Context, p string) (store.Node, error) {
	if ctx.Value(commitKey{}) != nil {
		r.gets.Add(1)
	}
	return r.reporter.Get(ctx, p)
}

// TestReportedCommitsAreNotReadBack: over a store.Reporter (SQLite, and
// ZooKeeper when EJ_TEST_ZK is set), what blind puts wrote (their versions
// are not in the ops) is taken from the commit's events instead of read
// back, and the copy agrees with the store.
func TestReportedCommitsAreNotReadBack(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "r.db"), sqlite.Options{Sync: sqlite.SyncNormal})
		if err != nil {
			t.Fatal(err)
		}
		reportedCommits(t, s)
	})
	t.Run("zookeeper", func(t *testing.T) {
		servers := testproxy.ZK(t)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		s, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(servers, ","),
			Namespace: fmt.Sprintf("ejtest/cache-report-%d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		reportedCommits(t, s)
	})
}

func reportedCommits(t *testing.T, s reporter) {
	back := &reportingKV{reporter: s}
	ctx := context.WithValue(t.Context(), commitKey{}, true)
	mustCommit(t, s, store.Create("/state/old", []byte("0")), store.Create("/state/gone", []byte("x")))
	c := openCache(t, back, "/state")
	for i := range 3 {
		err := c.Commit(ctx, store.Put("/state/old", []byte(fmt.Sprint(i+1))), store.Put("/state/new/a", []byte("n")),
			store.Put("/state/gone", []byte("y")), store.Delete("/state/gone", store.AnyVersion))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/state/old", "/state/new/a", "/state/gone"} {
			want, werr := s.Get(t.Context(), p)
			got, gerr := c.Get(t.Context(), p)
			if (werr == nil) != (gerr == nil) || string(got.Value) != string(want.Value) || got.Version != want.Version {
				t.Fatalf("round %d, %s: copy %+v %v, store %+v %v", i, p, got, gerr, want, werr)
			}
		}
	}
	if n := back.gets.Load(); n != 0 {
		t.Fatalf("%d reads made by the commits", n)
	}
}

// manualKV is a store whose watch reports only what the test sends, and
// whose List, once gated, holds its answer until released.
type manualKV struct {
	store.KV
	events  chan store.Event
	gate    atomic.Bool
	listed  chan struct{}
	release chan struct{}
}

func (m *manualKV) Watch(context.Context, string) (<-chan store.Event, error) { return m.events, nil }

func (m *manualKV) List(ctx context.Context, p string) ([]store.Node, error) {
	nodes, err := m.KV.List(ctx, p)
	if m.gate.CompareAndSwap(true, false) {
		close(m.listed)
		<-m.release
	}
	return nodes, err
}

// TestRescanLetsCommitsThrough: while a resync re-reads the subtree (on
// ZooKeeper a round trip per node, a minute for a large registry), commits
// go on, and what they wrote during the read is what the copy holds after
// the swap, not the older read.
func TestRescanLetsCommitsThrough(t *testing.T) {
	ctx := t.Context()
	inner := memory.New()
	mustCommit(t, inner, store.Create("/state/a", []byte("1")), store.Create("/state/b", []byte("1")))
	back := &manualKV{KV: inner, events: make(chan store.Event, 1), listed: make(chan struct{}), release: make(chan struct{})}
	c, err := cache.Open(ctx, back, cache.Options{Roots: []string{"/state"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ch, err := c.Watch(ctx, "/state")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(back.release) }) }
	t.Cleanup(release)
	back.gate.Store(true)
	back.events <- store.Event{Type: store.EventResync, Path: "/state"}
	<-back.listed // the rescan has read /state/a = 1 and /state/b
	done := make(chan error, 1)
	go func() {
		done <- c.Commit(ctx, store.Put("/state/a", []byte("2")), store.Delete("/state/b", store.AnyVersion),
			store.Create("/state/c/d", []byte("x")))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a commit waited for the rescan's read")
	}
	// Another writer's changes, notified while the read goes on: the worker
	// keeps taking them (the watch's queue holds one) and applies them
	// after the swap.
	mustCommit(t, inner, store.Create("/state/z", []byte("z")), store.Create("/state/y", []byte("y")))
	back.events <- store.Event{Type: store.EventPut, Path: "/state/z"}
	back.events <- store.Event{Type: store.EventPut, Path: "/state/y"}
	back.events <- store.Event{Type: store.EventPut, Path: "/state/y"}
	release()
	for ev := range ch {
		if ev.Type == store.EventResync {
			break
		}
	}
	for ev := range ch {
		if ev.Path == "/state/y" {
			break
		}
	}
	for _, p := range []string{"/state/z", "/state/y"} {
		if n, err := c.Get(ctx, p); err != nil || string(n.Value) != p[len(p)-1:] {
			t.Fatalf("%s, notified during the rescan = %q, %v", p, n.Value, err)
		}
	}
	if n, err := c.Get(ctx, "/state/a"); err != nil || string(n.Value) != "2" {
		t.Fatalf("/state/a after the rescan = %q, %v; want the commit's 2", n.Value, err)
	}
	if _, err := c.Get(ctx, "/state/b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/state/b after the rescan: %v; want it deleted", err)
	}
	if n, err := c.Get(ctx, "/state/c/d"); err != nil || string(n.Value) != "x" {
		t.Fatalf("/state/c/d after the rescan = %q, %v", n.Value, err)
	}
	if kids, _ := c.Children(ctx, "/state"); strings.Join(kids, ",") != "a,c,y,z" {
		t.Fatalf("children of /state = %v", kids)
	}
}
