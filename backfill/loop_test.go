package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

func put(t *testing.T, kv store.KV, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Commit(context.Background(), store.Put(path, b)); err != nil {
		t.Fatal(err)
	}
}

// leaderLoop is one term's loop over the shared store, fenced by its own
// leadership node.
func leaderLoop(kv store.KV, clk clock.Clock, node string) *Loop {
	reg := registry.New(kv, registry.Options{Fence: func() []store.Op { return []store.Op{store.Check(node, store.AnyVersion)} }})
	return &Loop{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler)}
}

// setup registers job "report" firing every ten minutes and returns the
// instants of [09:00, 10:00).
func setup(t *testing.T, kv store.KV) []time.Time {
	put(t, kv, registry.AppsPath+"/a", app.Config{AppName: "a", AppURL: "http://127.0.0.1/a.tgz", CPUCount: 1, MemoryMB: 128})
	put(t, kv, registry.JobsPath+"/report", jobs.Config{JobName: "report", AppName: "a", Cron: "0 */10 * * * ?", CPUCount: 1, MemoryMB: 128,
		ShardingTotalCount: 1, JobExecutionType: jobs.Transient})
	s, err := cron.Parse("0 */10 * * * ?")
	if err != nil {
		t.Fatal(err)
	}
	p := &cron.Plan{Crons: []*cron.Schedule{s}}
	ins, err := Instants(func(a, b time.Time, limit int) ([]time.Time, bool) { return p.Between(a, b, time.UTC, limit) }, 0, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

func create(t *testing.T, reg *registry.Registry, id string, ins []time.Time, conc int) {
	t.Helper()
	b := New(id, JobSource("default", "report"), t0, t0.Add(time.Hour), conc, ins, "test", t0.Add(24*time.Hour))
	if err := Create(context.Background(), reg, b, ins); err != nil {
		t.Fatal(err)
	}
}

// runQueued plays the launcher and the job: it takes every run queued for
// report and ends it (ok: succeeded), returning their scheduled instants.
func runQueued(t *testing.T, kv store.KV, ok bool) []time.Time {
	t.Helper()
	return runQueuedAt(t, kv, "", ok)
}

// runQueuedAt is runQueued for job report of the namespace tree under
// root ("": the default namespace's, at the store's root).
func runQueuedAt(t *testing.T, kv store.KV, root string, ok bool) []time.Time {
	t.Helper()
	ctx := context.Background()
	n, err := kv.Get(ctx, root+registry.ReadyPath+"/report")
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var rd queue.Ready
	if err := json.Unmarshal(n.Value, &rd); err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, r := range rd.Runs {
		out = append(out, r.ScheduledAt)
		put(t, kv, root+registry.TriggerKeysPath+"/"+r.IdempotencyKey, task.RunRecord{JobName: "report", At: r.At, Done: true, Success: ok, Failed: !ok})
	}
	if err := kv.Commit(ctx, store.Delete(n.Path, store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	return out
}

// A backfill of an hour of a ten-minute job queues its six instants one at
// a time, each handed its instant; leader A is deposed after two, its pass
// then writes nothing, and leader B runs the other four, none twice.
func TestLoopBackfillsAcrossATakeover(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	put(t, kv, "/leader/b", "b")
	ins := setup(t, kv)
	if len(ins) != 6 {
		t.Fatalf("instants %v", ins)
	}
	a, b := leaderLoop(kv, clk, "/leader/a"), leaderLoop(kv, clk, "/leader/b")
	create(t, a.Registry, "bf-1", ins, 2)

	var seen []time.Time
	for range 2 {
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Pass(ctx); err != nil { // busy: the run waits
			t.Fatal(err)
		}
		got := runQueued(t, kv, true)
		if len(got) != 1 {
			t.Fatalf("leader A queued %v, want one run", got)
		}
		seen = append(seen, got...)
		clk.Advance(time.Second)
	}
	if err := kv.Commit(ctx, store.Delete("/leader/a", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(ctx); !errors.Is(err, registry.ErrFenced) {
		t.Fatalf("deposed leader's pass: %v", err)
	}
	if got := runQueued(t, kv, true); len(got) != 0 {
		t.Fatalf("deposed leader queued %v", got)
	}
	for range 10 {
		if err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, runQueued(t, kv, true)...)
		clk.Advance(time.Second)
	}
	if len(seen) != 6 {
		t.Fatalf("runs %v, want the six instants once each", seen)
	}
	for i := range seen {
		if !seen[i].Equal(ins[i]) {
			t.Fatalf("run %d stood for %v, want %v", i, seen[i], ins[i])
		}
	}
	got, err := Get(ctx, b.Registry, "bf-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != Done || got.Progress() != (Progress{Done: 6, Total: 6}) {
		t.Fatalf("final record %+v progress %+v", got, got.Progress())
	}

	// The same range again runs nothing: every instant was queued once.
	create(t, b.Registry, "bf-2", ins, 1)
	for range 3 {
		if err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if got := runQueued(t, kv, true); len(got) != 0 {
			t.Fatalf("the second backfill ran %v", got)
		}
	}
	again, _ := Get(ctx, b.Registry, "bf-2")
	if again.State != Done || again.Skipped != 6 || again.Succeeded != 0 {
		t.Fatalf("second backfill %+v", again)
	}
}

// A backfill waits while the job has live work queued, and while paused;
// failures are counted.
func TestLoopYieldsToLiveWorkAndPauses(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	ins := setup(t, kv)
	l := leaderLoop(kv, clk, "/leader/a")
	create(t, l.Registry, "bf-1", ins, 1)

	put(t, kv, registry.ReadyPath+"/report", queue.Ready{Count: 1, Since: clk.Now(), PlainBy: []queue.Origin{{By: "cron", N: 1}}})
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := runQueued(t, kv, true); len(got) != 0 {
		t.Fatalf("queued beside a live fire: %v", got)
	}
	if _, err := Apply(ctx, l.Registry, "bf-1", "pause", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := runQueued(t, kv, true); len(got) != 0 {
		t.Fatalf("queued while paused: %v", got)
	}
	if _, err := Apply(ctx, l.Registry, "bf-1", "resume", clk.Now()); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		runQueued(t, kv, false)
	}
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := Get(ctx, l.Registry, "bf-1")
	if got.State != Done || got.Failed != 6 {
		t.Fatalf("record %+v", got)
	}
	if _, err := Apply(ctx, l.Registry, "bf-1", "cancel", clk.Now()); !errors.Is(err, ErrFinal) {
		t.Fatalf("cancel a finished backfill: %v", err)
	}
}

// A namespace's backfill keeps its runs' keys and records in the
// namespace's tree, and never borrows: it waits while the namespace's
// running work and its next run would pass its guarantee.
func TestLoopStaysWithinTheNamespaceGuarantee(t *testing.T) {
	ctx := context.Background()
	kv, clk, l := guaranteedPay(t, "0 */10 * * * ?")
	const root = payRoot
	ins := []time.Time{t0, t0.Add(10 * time.Minute)}
	b := New("bf-pay", JobSource("pay", "report"), t0, t0.Add(20*time.Minute), 1, ins, "test", clk.Now())
	if err := Create(ctx, l.Registry, b, ins); err != nil {
		t.Fatal(err)
	}
	// etl runs 2 × 0.5 CPU: the guarantee (1 CPU) is full.
	for item := range 2 {
		put(t, kv, root+registry.RunningPath+"/etl/"+jobs.MetaKey("etl", item), task.Entry{TaskID: fmt.Sprintf("etl@-@%d@-@READY@-@s@-@x", item), State: task.Running})
	}
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := runQueuedAt(t, kv, root, true); len(got) != 0 {
		t.Fatalf("queued past the guarantee: %v", got)
	}
	if err := kv.Commit(ctx, store.Delete(root+registry.RunningPath+"/etl/"+jobs.MetaKey("etl", 1), store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	var seen []time.Time
	for range 20 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, runQueuedAt(t, kv, root, true)...)
	}
	got, _ := Get(ctx, l.Registry, "bf-pay")
	if len(seen) != 2 || got.State != Done || got.Succeeded != 2 {
		t.Fatalf("runs %v, record %+v", seen, got)
	}
}

// An ended backfill is kept for Retention, then forgotten with the marks of
// the instants it queued: its record is gone and the same range may be
// backfilled again. A live one is never forgotten.
func TestLoopForgetsEndedBackfills(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	ins := setup(t, kv)
	l := leaderLoop(kv, clk, "/leader/a")
	create(t, l.Registry, "bf-1", ins, 6)
	create(t, l.Registry, "bf-live", ins[:1], 1)
	for range 20 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		runQueued(t, kv, true)
		clk.Advance(time.Second)
	}
	if b, err := Get(ctx, l.Registry, "bf-1"); err != nil || b.State != Done {
		t.Fatalf("bf-1 %+v %v", b, err)
	}
	// bf-live stays in flight: its run is queued but never ends.
	rec, ver := mustRecord(t, ctx, l.Registry, "bf-live", func(b *Backfill) {
		b.State, b.EndedAt = Running, time.Time{}
		b.InFlight = []Flight{{At: ins[0], Key: "k"}}
	})
	if err := l.Registry.Schedule().SetBackfill(ctx, "bf-live", rec, ver); err != nil {
		t.Fatal(err)
	}
	clk.Advance(Retention - time.Minute)
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, l.Registry, "bf-1"); err != nil {
		t.Fatalf("bf-1 forgotten before its retention: %v", err)
	}
	clk.Advance(2 * time.Minute)
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, l.Registry, "bf-1"); !errors.Is(err, registry.ErrBackfillNotFound) {
		t.Fatalf("bf-1 after its retention: %v", err)
	}
	if _, err := l.Registry.Schedule().BackfillInstants(ctx, "bf-1"); !errors.Is(err, registry.ErrBackfillNotFound) {
		t.Fatalf("bf-1's instants after its retention: %v", err)
	}
	if _, err := Get(ctx, l.Registry, "bf-live"); err != nil {
		t.Fatalf("a live backfill was forgotten: %v", err)
	}
	// The range again: every instant runs once more.
	create(t, l.Registry, "bf-2", ins, 6)
	var seen []time.Time
	for range 20 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, runQueued(t, kv, true)...)
		clk.Advance(time.Second)
	}
	if len(seen) != len(ins) {
		t.Fatalf("after forgetting, the range ran %v, want its %d instants", seen, len(ins))
	}
}

// mustRecord reads backfill id, applies edit and returns the record and
// version SetBackfill wants.
func mustRecord(t *testing.T, ctx context.Context, reg *registry.Registry, id string, edit func(*Backfill)) ([]byte, int64) {
	t.Helper()
	n, err := reg.Schedule().Backfill(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(n)
	if err != nil {
		t.Fatal(err)
	}
	edit(&b)
	v, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return v, n.Version()
}

// payRoot is namespace pay's tree, as guaranteedPay writes it.
const payRoot = registry.NamespacesPath + "/pay"

// guaranteedPay is a leader's loop over a store with namespace pay
// guaranteed 1 CPU and 1 GB, its app a and two jobs, report and etl (0.5
// CPU, one shard each, on cron, which may be "").
func guaranteedPay(t *testing.T, cron string) (store.KV, *clock.Fake, *Loop) {
	t.Helper()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	l := leaderLoop(kv, clk, "/leader/a")
	if _, err := l.Registry.Tenancy().PutNamespace(context.Background(), namespace.Record{Name: "pay", Guarantee: &namespace.Resources{CPUCount: 1, MemoryMB: 1024}}); err != nil {
		t.Fatal(err)
	}
	put(t, kv, payRoot+registry.AppsPath+"/a", app.Config{AppName: "a", AppURL: "http://127.0.0.1/a.tgz", CPUCount: 1, MemoryMB: 128})
	for _, j := range []string{"report", "etl"} {
		put(t, kv, payRoot+registry.JobsPath+"/"+j, jobs.Config{JobName: j, AppName: "a", Cron: cron, CPUCount: 0.5, MemoryMB: 128,
			ShardingTotalCount: 1, JobExecutionType: jobs.Transient})
	}
	return kv, clk, l
}

// A failed instant is not done: the record lists it, and backfilling the
// range again re-runs it (and only it); the instants that succeeded stay
// done and are skipped.
func TestLoopRerunsFailedInstants(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	ins := setup(t, kv)
	l := leaderLoop(kv, clk, "/leader/a")
	create(t, l.Registry, "bf-1", ins, 1)
	for i := range 12 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		runQueued(t, kv, i != 1 && i != 4) // pass i queues instant i: the 2nd and 5th fail
		clk.Advance(time.Second)
	}
	first, _ := Get(ctx, l.Registry, "bf-1")
	want := []time.Time{ins[1], ins[4]}
	if first.State != Done || first.Failed != 2 || fmt.Sprint(first.FailedInstants()) != fmt.Sprint(want) {
		t.Fatalf("first backfill %+v, failed instants %v, want %v", first, first.FailedInstants(), want)
	}

	create(t, l.Registry, "bf-2", ins, 1)
	var seen []time.Time
	for range 12 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, runQueued(t, kv, true)...)
		clk.Advance(time.Second)
	}
	again, _ := Get(ctx, l.Registry, "bf-2")
	if fmt.Sprint(seen) != fmt.Sprint(want) || again.State != Done || again.Succeeded != 2 || again.Skipped != 4 || again.Failed != 0 {
		t.Fatalf("the range again ran %v (want %v), record %+v", seen, want, again)
	}
	// Both succeeded now: a third backfill runs nothing.
	create(t, l.Registry, "bf-3", ins, 1)
	for range 4 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if got := runQueued(t, kv, true); len(got) != 0 {
			t.Fatalf("the third backfill ran %v", got)
		}
	}
}
