package etcd

import (
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/storetest"
)

// TestConformanceLocalPlans runs the suite on a 3-member cluster with
// commits planned from the applied state of the member they go through
// (Options.LocalPlans), watches through another member.
func TestConformanceLocalPlans(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		w := openStore(t, ms[0].Endpoints(), Options{LocalPlans: true})
		r := openStore(t, ms[2].Endpoints(), Options{Prefix: w.k.prefix})
		return split{Store: w, watcher: r}
	}, storetest.Options{ManyChildren: 3000, SlowEvents: 3000, Timeout: 20 * time.Second})
}

func TestLocalPlansNeedOneEndpoint(t *testing.T) {
	_, err := Open(t.Context(), Options{Endpoints: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, LocalPlans: true})
	if err == nil {
		t.Fatal("Open with LocalPlans and two endpoints: no error")
	}
}

// TestLocalPlansOnALaggingMember: a commit planned from the state of a
// member that has not applied the latest writes (the snapshot is read at
// an older revision) ends exactly as one planned from a fresh read:
// whatever the stale state got wrong fails a compare or is decided again
// from a linearizable read, and nothing is written that a fresh plan
// would not write.
func TestLocalPlansOnALaggingMember(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	ctx := t.Context()
	a := openStore(t, ms[0].Endpoints(), Options{LocalPlans: true})
	b := openStore(t, ms[1].Endpoints(), Options{Prefix: a.k.prefix})
	for _, c := range []struct {
		name   string
		before []store.Op // committed before the lag point
		after  []store.Op // committed through the other member after it
		ops    []store.Op // the lagging member's commit
		want   error      // nil: committed
		check  func(t *testing.T)
	}{
		{name: "create of a node created since", after: []store.Op{store.Create("/c1", []byte("b"))},
			ops: []store.Op{store.Create("/c1", []byte("a"))}, want: store.ErrExists,
			check: func(t *testing.T) { wantValue(t, b, "/c1", "b", 0) }},
		{name: "fence removed since", before: []store.Op{store.Create("/term1", nil)},
			after: []store.Op{store.Delete("/term1", store.AnyVersion)},
			ops:   []store.Op{store.Check("/term1", 0), store.Put("/w1", []byte("stale"))}, want: store.ErrNotFound,
			check: func(t *testing.T) { wantAbsent(t, b, "/w1") }},
		{name: "fence moved since", before: []store.Op{store.Create("/term2", nil)},
			after: []store.Op{store.Set("/term2", []byte("next"), 0)},
			ops:   []store.Op{store.Check("/term2", 0), store.Put("/w2", []byte("stale"))}, want: store.ErrConflict,
			check: func(t *testing.T) { wantAbsent(t, b, "/w2") }},
		{name: "put counts the versions written since", before: []store.Op{store.Create("/p", []byte("0"))},
			after: []store.Op{store.Put("/p", []byte("1")), store.Put("/p", []byte("2"))},
			ops:   []store.Op{store.Put("/p", []byte("3"))},
			check: func(t *testing.T) { wantValue(t, b, "/p", "3", 3) }},
		{name: "delete takes a child added since", before: []store.Op{store.Create("/d/x", nil)},
			after: []store.Op{store.Create("/d/x/y/z", nil)},
			ops:   []store.Op{store.Delete("/d", store.AnyVersion)},
			check: func(t *testing.T) { wantAbsent(t, b, "/d/x/y/z") }},
		{name: "create of a node deleted since", before: []store.Op{store.Create("/r", []byte("old"))},
			after: []store.Op{store.Delete("/r", store.AnyVersion)},
			ops:   []store.Op{store.Create("/r", []byte("new"))},
			check: func(t *testing.T) { wantValue(t, b, "/r", "new", 0) }},
		{name: "check only, of a node deleted since", before: []store.Op{store.Create("/k", nil)},
			after: []store.Op{store.Delete("/k", store.AnyVersion)},
			ops:   []store.Op{store.Check("/k", store.AnyVersion)}, want: store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.before) > 0 {
				if err := b.Commit(ctx, c.before...); err != nil {
					t.Fatal(err)
				}
			}
			lag, err := b.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(ctx, c.after...); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Revision(ctx); err != nil { // a's member has applied lag (a read at it is no future revision)
				t.Fatal(err)
			}
			a.lagAt = func() int64 { return lag }
			defer func() { a.lagAt = nil }()
			err = a.Commit(ctx, c.ops...)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("commit on the lagging member: %v, want %v", err, c.want)
			}
			if c.check != nil {
				c.check(t)
			}
		})
	}
	if n := shapeCount(t, a, shapeLocalMissed); n == 0 {
		t.Error("no commit counted as planned again from a fresh read")
	}
}

func wantValue(t *testing.T, kv store.KV, path, value string, version int64) {
	t.Helper()
	n, err := kv.Get(t.Context(), path)
	if err != nil || string(n.Value) != value || n.Version != version {
		t.Fatalf("Get(%s) = %q v%d, %v; want %q v%d", path, n.Value, n.Version, err, value, version)
	}
}

func wantAbsent(t *testing.T, kv store.KV, path string) {
	t.Helper()
	if n, err := kv.Get(t.Context(), path); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%s) = %q, %v; want not found", path, n.Value, err)
	}
}

// shapeCount reads the store's commit-shape counter.
func shapeCount(t *testing.T, s *Store, shape string) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.shapes.WithLabelValues(shape).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestConformanceInProcess runs the suite on a 3-member cluster through
// stores that call their members in-process (Options.Member), planning
// from their applied state, as the scheduler's store does on its own
// member: commits through one member, watches through another.
func TestConformanceInProcess(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		w := openStore(t, nil, Options{Member: ms[0], LocalPlans: true})
		r := openStore(t, nil, Options{Member: ms[2], Prefix: w.k.prefix})
		return split{Store: w, watcher: r}
	}, storetest.Options{ManyChildren: 3000, SlowEvents: 3000, Timeout: 20 * time.Second})
}

// TestInProcessAdminAddressesEachMember: the admin's calls that name a
// member by its URL reach that member, not the in-process one (whose
// client answers them from itself whatever the URL), and closing the
// store leaves the member running.
func TestInProcessAdminAddressesEachMember(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	s := openStore(t, nil, Options{Member: ms[1], LocalPlans: true, Prefix: "/ops"})
	sts, err := NewAdmin(s).Statuses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if h, l := healthyLeaders(t, sts); len(sts) != 3 || h != 3 || l != 1 {
		t.Fatalf("members %d, healthy %d, leaders %d; want 3, 3, 1: %+v", len(sts), h, l, sts)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openStore(t, nil, Options{Member: ms[1], Prefix: "/ops"})
	if err := again.Commit(t.Context(), store.Put("/after", nil)); err != nil {
		t.Fatalf("a store on the member after another closed: %v", err)
	}
}
