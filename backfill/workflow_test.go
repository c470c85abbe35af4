package backfill

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// setupWorkflow registers workflow "nightly" (one node of job report) on
// a ten-minute cron and returns the instants of [09:00, 10:00).
func setupWorkflow(t *testing.T, kv store.KV) []time.Time {
	t.Helper()
	setup(t, kv)
	c := workflow.Default()
	c.Name, c.Cron, c.Nodes = "nightly", "0 */10 * * * ?", []workflow.Node{{ID: "x", Job: "report"}}
	if err := registry.New(kv).Flows().AddWorkflow(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	p, err := c.Plan(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := Instants(func(a, b time.Time, limit int) ([]time.Time, bool) { return p.Between(a, b, time.UTC, limit) }, p.Offset, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

func createWorkflow(t *testing.T, reg *registry.Registry, id string, ins []time.Time, conc int) {
	t.Helper()
	b := New(id, WorkflowSource("default", "nightly"), t0, t0.Add(time.Hour), conc, ins, "test", t0.Add(24*time.Hour))
	if err := Create(context.Background(), reg, b, ins); err != nil {
		t.Fatal(err)
	}
}

// playEngine plays the workflow engine and the jobs: every QUEUED
// backfill run begins (RUNNING) and every RUNNING one ends in end (""
// leaves it running). It returns the instants of the runs it began.
func playEngine(t *testing.T, kv store.KV, end workflow.RunState) []time.Time {
	t.Helper()
	ctx := context.Background()
	reg := registry.New(kv)
	runs, err := reg.Flows().WorkflowRuns(ctx, "nightly")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	var began []time.Time
	for _, r := range runs {
		if r.Source != workflow.SourceBackfill || r.State.Final() {
			continue
		}
		next := r.State
		switch {
		case r.State == workflow.RunQueued:
			next = workflow.RunRunning
			began = append(began, r.ScheduledAt)
		case end != "":
			next = end
		}
		if _, err := reg.Flows().UpdateWorkflowRun(ctx, "nightly", r.ID, func(w workflow.Run) (workflow.Run, error) { w.State = next; return w, nil }); err != nil {
			t.Fatal(err)
		}
	}
	return began
}

// A workflow's backfill of an hour of a ten-minute cron makes one run per
// instant (source BACKFILL, scheduledAt the instant, at most concurrency
// running); leader A is deposed midway and writes nothing more, leader B
// makes the rest, none twice; the same range again makes nothing.
func TestLoopBackfillsAWorkflowAcrossATakeover(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	put(t, kv, "/leader/b", "b")
	ins := setupWorkflow(t, kv)
	if len(ins) != 6 {
		t.Fatalf("instants %v", ins)
	}
	a, b := leaderLoop(kv, clk, "/leader/a"), leaderLoop(kv, clk, "/leader/b")
	createWorkflow(t, a.Registry, "bf-1", ins, 2)

	var seen []time.Time
	for range 3 {
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Pass(ctx); err != nil { // busy: its run waits to begin
			t.Fatal(err)
		}
		seen = append(seen, playEngine(t, kv, "")...)
		clk.Advance(time.Second)
	}
	if len(seen) != 2 {
		t.Fatalf("leader A began %v, want two (concurrency 2)", seen)
	}
	if err := kv.Commit(ctx, store.Delete("/leader/a", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	playEngine(t, kv, workflow.RunSucceeded) // A's two runs end: its pass would write
	if err := a.Pass(ctx); !errors.Is(err, registry.ErrFenced) {
		t.Fatalf("deposed leader's pass: %v", err)
	}
	if runs, _ := a.Registry.Flows().WorkflowRuns(ctx, "nightly"); len(runs) != 2 {
		t.Fatalf("the deposed leader made runs: %d", len(runs))
	}
	for range 20 {
		if err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, playEngine(t, kv, workflow.RunSucceeded)...)
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
	runs, _ := b.Registry.Flows().WorkflowRuns(ctx, "nightly")
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 6", len(runs))
	}

	createWorkflow(t, b.Registry, "bf-2", ins, 1)
	for range 3 {
		if err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	again, _ := Get(ctx, b.Registry, "bf-2")
	if runs, _ := b.Registry.Flows().WorkflowRuns(ctx, "nightly"); len(runs) != 6 || again.State != Done || again.Skipped != 6 {
		t.Fatalf("the second backfill: %d runs, %+v", len(runs), again)
	}
}

// A workflow's backfill waits while a live run is in flight, while paused
// and while the workflow is disabled; failed runs are counted; deleting
// the workflow cancels it.
func TestLoopWorkflowYieldsToLiveRuns(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	ins := setupWorkflow(t, kv)
	l := leaderLoop(kv, clk, "/leader/a")
	createWorkflow(t, l.Registry, "bf-1", ins, 1)

	c, err := l.Registry.Flows().Workflow(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	live := workflow.NewRun(c, workflow.NewRunID(clk.Now(), "cron"), workflow.SourceCron, nil, "", clk.Now())
	if _, _, err := l.Registry.Flows().CreateWorkflowRun(ctx, live, 0); err != nil {
		t.Fatal(err)
	}
	pass := func() {
		t.Helper()
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if got := playEngine(t, kv, ""); len(got) != 0 {
		t.Fatalf("began beside a live run: %v", got)
	}
	if _, err := l.Registry.Flows().UpdateWorkflowRun(ctx, "nightly", live.ID, func(w workflow.Run) (workflow.Run, error) { w.State = workflow.RunSucceeded; return w, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, l.Registry, "bf-1", "pause", clk.Now()); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := playEngine(t, kv, ""); len(got) != 0 {
		t.Fatalf("began while paused: %v", got)
	}
	if _, err := Apply(ctx, l.Registry, "bf-1", "resume", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.Registry.Config().SetDisabled(ctx, "workflow", "nightly", true, clk.Now()); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := playEngine(t, kv, ""); len(got) != 0 {
		t.Fatalf("began while disabled: %v", got)
	}
	if err := l.Registry.Config().SetDisabled(ctx, "workflow", "nightly", false, clk.Now()); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := playEngine(t, kv, workflow.RunFailed); len(got) != 1 || !got[0].Equal(ins[0]) {
		t.Fatalf("began %v, want the first instant", got)
	}
	playEngine(t, kv, workflow.RunFailed)
	pass()
	b, _ := Get(ctx, l.Registry, "bf-1")
	if b.Failed != 1 || b.Next != 2 {
		t.Fatalf("after a failed run %+v", b)
	}
	if err := l.Registry.Flows().DeleteWorkflow(ctx, "nightly", clk.Now()); err != nil {
		t.Fatal(err)
	}
	pass()
	pass()
	pass()
	if b, _ := Get(ctx, l.Registry, "bf-1"); b.State != Cancelled || !b.Final() {
		t.Fatalf("after the workflow was deleted %+v", b)
	}
}

// A backfill of a workflow of namespace pay makes its runs in pay's tree
// (the namespace's view reads them by the workflow's own name).
func TestLoopBackfillsANamespacedWorkflow(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(24 * time.Hour))
	put(t, kv, "/leader/a", "a")
	ins := setupWorkflow(t, kv)
	if _, err := registry.New(kv).Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	pay := registry.New(kv).In("pay")
	c := workflow.Default()
	c.Name, c.Cron, c.Nodes = "nightly", "0 */10 * * * ?", []workflow.Node{{ID: "x", Job: "report"}}
	if err := pay.Flows().AddWorkflow(ctx, c); err != nil {
		t.Fatal(err)
	}
	l := leaderLoop(kv, clk, "/leader/a")
	b := New("bf-pay", WorkflowSource("pay", "nightly"), t0, t0.Add(time.Hour), 1, ins, "test", clk.Now())
	if err := Create(ctx, l.Registry, b, ins); err != nil {
		t.Fatal(err)
	}
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	runs, err := pay.Flows().WorkflowRuns(ctx, "nightly")
	if err != nil || len(runs) != 1 || !runs[0].ScheduledAt.Equal(ins[0]) || runs[0].Source != workflow.SourceBackfill {
		t.Fatalf("pay's runs %+v, %v", runs, err)
	}
	if def, _ := registry.New(kv).Flows().WorkflowRuns(ctx, "nightly"); len(def) != 0 {
		t.Fatalf("the default namespace's workflow got runs: %+v", def)
	}
	got, _ := Get(ctx, l.Registry, "bf-pay")
	if len(got.InFlight) != 1 || got.InFlight[0].Key != runs[0].ID {
		t.Fatalf("record %+v", got)
	}
}

// In a namespace with a guarantee, a workflow's backfill run is made only
// when its first wave (the nodes depending on none) fits beside what the
// namespace runs: it never borrows, as a job's backfill does not.
func TestLoopWorkflowStaysWithinTheNamespaceGuarantee(t *testing.T) {
	ctx := context.Background()
	kv, clk, l := guaranteedPay(t, "")
	const root = payRoot
	pay := registry.New(kv).In("pay")
	c := workflow.Default()
	c.Name, c.Cron = "nightly", "0 */10 * * * ?"
	c.Nodes = []workflow.Node{{ID: "x", Job: "report"}, {ID: "y", Job: "etl", DependsOn: []string{"x"}}}
	if err := pay.Flows().AddWorkflow(ctx, c); err != nil {
		t.Fatal(err)
	}
	ins := []time.Time{t0, t0.Add(10 * time.Minute)}
	b := New("bf-pay", WorkflowSource("pay", "nightly"), t0, t0.Add(20*time.Minute), 1, ins, "test", clk.Now())
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
	if runs, _ := pay.Flows().WorkflowRuns(ctx, "nightly"); len(runs) != 0 {
		t.Fatalf("a run was made past the guarantee: %+v", runs)
	}
	// One etl shard ends: report's 0.5 CPU fits (only the first wave counts).
	if err := kv.Commit(ctx, store.Delete(root+registry.RunningPath+"/etl/"+jobs.MetaKey("etl", 1), store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := l.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	runs, err := pay.Flows().WorkflowRuns(ctx, "nightly")
	if err != nil || len(runs) != 1 || !runs[0].ScheduledAt.Equal(ins[0]) {
		t.Fatalf("after room was made: runs %+v, %v", runs, err)
	}
}
