package deadline

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

type recorder struct {
	mu     sync.Mutex
	alerts []observe.DeadlineAlert
	hooks  []observe.Hook
	errs   []float64
}

func (r *recorder) DeadlineMissed(a observe.DeadlineAlert, h observe.Hook) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alerts = append(r.alerts, a)
	r.hooks = append(r.hooks, h)
}

func (r *recorder) StartEstimateError(_ string, _ time.Duration, ratio float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, ratio)
}

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

// term is one leader's watcher over the shared store, fenced by its own
// leadership node.
func term(kv store.KV, clk clock.Clock, node string, sink *recorder) *Watcher {
	reg := registry.New(kv, registry.Options{Fence: func() []store.Op { return []store.Op{store.Check(node, store.AnyVersion)} }})
	return &Watcher{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Sinks: []observe.Deadlines{sink}, Estimates: sink,
		Typical: &TypicalCache{Clock: clk, Source: func(context.Context, string) ([]time.Duration, error) {
			return []time.Duration{time.Minute, time.Minute, time.Minute}, nil
		}}}
}

// A takeover neither drops nor repeats an alert: leader A raises the
// start alert; it is deposed (its fence gone) before the run alert is
// due, so its pass raises nothing; leader B raises the run alert once,
// and not A's start alert again.
func TestWatcherTakeoverNeitherDropsNorRepeats(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0)
	put(t, kv, "/leader/a", "a")
	put(t, kv, registry.JobsPath+"/report", jobs.Config{JobName: "report", AppName: "a", StartDeadlineSeconds: 60, RunDeadlineSeconds: 600,
		CPUCount: 1, MemoryMB: 128, ShardingTotalCount: 1})
	put(t, kv, registry.ReadyPath+"/report", queue.Ready{Count: 1, Since: t0})

	sinkA, sinkB := &recorder{}, &recorder{}
	a := term(kv, clk, "/leader/a", sinkA)
	clk.Advance(30 * time.Second)
	if err := a.Pass(ctx); err != nil || len(sinkA.alerts) != 0 {
		t.Fatalf("before the deadline: %v %v", err, sinkA.alerts)
	}
	clk.Advance(45 * time.Second)
	if err := a.Pass(ctx); err != nil || len(sinkA.alerts) != 1 || sinkA.alerts[0].Kind != observe.DeadlineStart {
		t.Fatalf("start deadline: %v %v", err, sinkA.alerts)
	}
	if err := a.Pass(ctx); err != nil || len(sinkA.alerts) != 1 {
		t.Fatalf("raised twice by one leader: %v %v", err, sinkA.alerts)
	}

	// The run starts (still waiting for another execution of the same fire
	// would keep the ready entry; here it leaves the queue).
	started := clk.Now()
	if err := kv.Commit(ctx, store.Delete(registry.ReadyPath+"/report", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	put(t, kv, registry.RunningPath+"/report/"+jobs.MetaKey("report", 0), task.Entry{TaskID: "t1", LaunchedAt: started})
	clk.Advance(11 * time.Minute)

	// A is deposed; its pass at the due time records and raises nothing.
	if err := kv.Commit(ctx, store.Delete("/leader/a", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(ctx); err == nil || len(sinkA.alerts) != 1 {
		t.Fatalf("a deposed leader raised: %v %v", err, sinkA.alerts)
	}
	put(t, kv, "/leader/b", "b")
	b := term(kv, clk, "/leader/b", sinkB)
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sinkB.alerts) != 1 || sinkB.alerts[0].Kind != observe.DeadlineRun || sinkB.alerts[0].TaskID != "t1" {
		t.Fatalf("leader B raised %+v, want the run alert once", sinkB.alerts)
	}
	// The start alert's record was forgotten once its execution started;
	// the run alert's is kept while it runs.
	keys, err := b.Registry.Schedule().AlertKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0] != sinkB.alerts[0].PathKey() {
		t.Fatalf("recorded alerts %v %v", keys, err)
	}
}

// A leader that recorded an alert and lost leadership before telling its
// sinks is not followed by a second notification: the record is the
// alert (docs/jobs.md states this at-most-once window).
func TestWatcherRecordedAlertIsNotRaisedAgain(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(2 * time.Minute))
	put(t, kv, "/leader/b", "b")
	put(t, kv, registry.JobsPath+"/report", jobs.Config{JobName: "report", StartDeadlineSeconds: 60})
	put(t, kv, registry.ReadyPath+"/report", queue.Ready{Count: 1, Since: t0})
	a := observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "default", Job: "report", Since: t0}
	if ok, err := registry.New(kv).Schedule().MarkAlert(ctx, a.PathKey(), []byte("{}")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	sink := &recorder{}
	if err := term(kv, clk, "/leader/b", sink).Pass(ctx); err != nil || len(sink.alerts) != 0 {
		t.Fatalf("%v %v", err, sink.alerts)
	}
}

func TestWatcherMeasuresStartEstimates(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0)
	put(t, kv, "/leader/a", "a")
	// x runs (p90 one minute), y waits for its CPU: estimated at t0+1m.
	xRunsYWaits(t, kv)
	sink := &recorder{}
	w := term(kv, clk, "/leader/a", sink)
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// y starts at t0+80s: the estimate was 20 s off of an 80 s wait.
	clk.Advance(80 * time.Second)
	yStarts(t, kv, clk.Now())
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.errs) != 1 || sink.errs[0] != 0.25 {
		t.Fatalf("estimate errors %v, want [0.25]", sink.errs)
	}
}

// A workflow's deadlines: a run still QUEUED past its start deadline and a
// RUNNING one past its run deadline alert once each, named by their run.
func TestWatcherWorkflowDeadlines(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(10 * time.Minute))
	put(t, kv, "/leader/a", "a")
	put(t, kv, registry.WorkflowsPath+"/nightly", workflow.Config{Name: "nightly", StartDeadlineSeconds: 60, RunDeadlineSeconds: 300,
		MaxConcurrentRuns: 1, Nodes: []workflow.Node{{ID: "a", Job: "x"}}, WebhookURL: "http://127.0.0.1:9/hook", WebhookFormat: "slack"})
	put(t, kv, registry.WorkflowRunsPath+"/nightly/r1", workflow.Run{Workflow: "nightly", ID: "r1", State: workflow.RunRunning, CreatedAt: t0, StartedAt: t0})
	put(t, kv, registry.WorkflowRunsPath+"/nightly/r2", workflow.Run{Workflow: "nightly", ID: "r2", State: workflow.RunQueued, CreatedAt: t0.Add(time.Minute)})
	put(t, kv, registry.WorkflowRunsPath+"/nightly/r0", workflow.Run{Workflow: "nightly", ID: "r0", State: workflow.RunSucceeded, CreatedAt: t0, StartedAt: t0})
	sink := &recorder{}
	w := term(kv, clk, "/leader/a", sink)
	for range 2 {
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for _, a := range sink.alerts {
		got[string(a.Kind)+":"+a.Workflow+":"+a.RunID] = true
	}
	if len(sink.alerts) != 2 || !got["run:nightly:r1"] || !got["start:nightly:r2"] {
		t.Fatalf("alerts %+v", sink.alerts)
	}
	for _, h := range sink.hooks { // the workflow's own webhook
		if h != (observe.Hook{URL: "http://127.0.0.1:9/hook", Format: "slack"}) {
			t.Fatalf("hooks %+v", sink.hooks)
		}
	}
}

func TestCheckFlowsRunAt(t *testing.T) {
	c := workflow.Config{Name: "w", RunDeadlineAt: "09:30"}
	runs := []FlowRun{{Workflow: "team~w", Run: workflow.Run{ID: "r", State: workflow.RunRunning, StartedAt: t0}}}
	flows := func(string) (workflow.Config, bool) { return c, true }
	due, live := CheckFlows(t0.Add(29*time.Minute), time.UTC, flows, runs, nil, map[string]bool{})
	if len(due) != 0 || len(live) != 1 {
		t.Fatalf("%v %v", due, live)
	}
	due, _ = CheckFlows(t0.Add(30*time.Minute), time.UTC, flows, runs, nil, map[string]bool{})
	if len(due) != 1 || due[0].Kind != observe.DeadlineRunAt || due[0].Namespace != "team" || due[0].Workflow != "w" || due[0].Job != "" {
		t.Fatalf("%+v", due)
	}
}

// A namespace's job is read under its key and alerted with its namespace.
func TestWatcherNamespacedJob(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(2 * time.Minute))
	put(t, kv, "/leader/a", "a")
	put(t, kv, registry.NamespacesPath+"/team", map[string]any{"limit": map[string]float64{"cpuCount": 2, "memoryMB": 1024}})
	put(t, kv, registry.NamespacesPath+"/team"+registry.JobsPath+"/etl", jobs.Config{JobName: "etl", StartDeadlineSeconds: 60, CPUCount: 1, MemoryMB: 64, ShardingTotalCount: 1})
	put(t, kv, registry.NamespacesPath+"/team"+registry.ReadyPath+"/etl", queue.Ready{Count: 1, Since: t0})
	sink := &recorder{}
	if err := term(kv, clk, "/leader/a", sink).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.alerts) != 1 || sink.alerts[0].Namespace != "team" || sink.alerts[0].Job != "etl" {
		t.Fatalf("%+v", sink.alerts)
	}
}

type agents []engine.Agent

func (a agents) Agents(context.Context) ([]engine.Agent, error) { return a, nil }

// With the engine's agents known, a namespace with no capacity of its own
// gets what the cluster leaves: y fits beside x now (estimated at t0); it
// started at t0+40s, so the estimate was its whole wait off.
func TestWatcherEstimatesFromTheCluster(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0)
	put(t, kv, "/leader/a", "a")
	xRunsYWaits(t, kv)
	sink := &recorder{}
	w := term(kv, clk, "/leader/a", sink)
	w.Inventory = agents{{ID: "a1", CPUs: 2, MemMB: 1024}}
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(40 * time.Second)
	yStarts(t, kv, clk.Now())
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.errs) != 1 || sink.errs[0] != 1 {
		t.Fatalf("estimate errors %v, want [1]", sink.errs)
	}
}

// xRunsYWaits registers jobs x and y (1 CPU, one shard each): x running
// since t0, y waiting since t0.
func xRunsYWaits(t *testing.T, kv store.KV) {
	t.Helper()
	for _, n := range []string{"x", "y"} {
		put(t, kv, registry.JobsPath+"/"+n, jobs.Config{JobName: n, CPUCount: 1, MemoryMB: 128, ShardingTotalCount: 1})
	}
	put(t, kv, registry.RunningPath+"/x/"+jobs.MetaKey("x", 0), task.Entry{TaskID: "tx", LaunchedAt: t0})
	put(t, kv, registry.ReadyPath+"/y", queue.Ready{Count: 1, Since: t0})
}

// yStarts moves y's waiting execution to running, launched at.
func yStarts(t *testing.T, kv store.KV, at time.Time) {
	t.Helper()
	if err := kv.Commit(context.Background(), store.Delete(registry.ReadyPath+"/y", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	put(t, kv, registry.RunningPath+"/y/"+jobs.MetaKey("y", 0), task.Entry{TaskID: "ty", LaunchedAt: at})
}
