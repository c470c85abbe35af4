package flowengine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

var t0 = time.Date(2025, 3, 1, 1, 59, 0, 0, time.UTC)

// rig is an engine on an in-memory registry with a fake clock. The tests
// play the scheduler: they take node executions from the ready queue and
// write how they ended into their records.
type rig struct {
	t      *testing.T
	ctx    context.Context
	kv     store.KV
	reg    *registry.Registry
	clk    *clock.Fake
	eng    *Engine
	kills  *killRecorder
	seen   *recorder
	killed []string
}

type killRecorder struct {
	mu    sync.Mutex
	tasks []string
}

func (k *killRecorder) Kill(_ context.Context, taskID, _ string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tasks = append(k.tasks, taskID)
	return nil
}

// recorder keeps every change the engine reported.
type recorder struct{ changes [][2]workflow.Run }

func (r *recorder) RunChanged(prev, next workflow.Run) {
	r.changes = append(r.changes, [2]workflow.Run{prev, next})
}

func newRig(t *testing.T, jobNames ...string) *rig {
	t.Helper()
	kv := memory.New()
	r := &rig{t: t, ctx: context.Background(), kv: kv, reg: registry.New(kv), clk: clock.NewFake(t0), kills: &killRecorder{}, seen: &recorder{}}
	if err := r.reg.Config().AddApp(r.ctx, app.Config{AppName: "app", AppURL: "file:///a.tgz", BootstrapScript: "run.sh", CPUCount: 1, MemoryMB: 32}); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobNames {
		cfg := jobs.Config{JobName: j, AppName: "app", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 8, JobParameter: "own-" + j}
		if err := r.reg.Config().AddJob(r.ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	r.eng = r.newEngine(r.reg)
	return r
}

func (r *rig) newEngine(reg *registry.Registry) *Engine {
	return New(Deps{Registry: reg, Killer: r.kills, Clock: r.clk, Observer: r.seen,
		Options: Options{KeptRuns: 3, Sweep: 5 * time.Second}})
}

// start loads the engine as a new term does.
func (r *rig) start() {
	r.t.Helper()
	if err := r.eng.load(r.ctx); err != nil { // as Run does
		r.t.Fatal(err)
	}
	if err := r.eng.scheduleAll(r.ctx, true); err != nil {
		r.t.Fatal(err)
	}
	r.round()
}

// round marks every active run dirty (as the watches would) and runs one
// round of the loop.
func (r *rig) round() {
	r.t.Helper()
	for wf, runs := range r.eng.active {
		for id := range runs {
			r.eng.dirty[runRef{wf, id}] = true
		}
	}
	if err := r.eng.round(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) register(c workflow.Config) {
	r.t.Helper()
	for i := range c.Nodes {
		c.Nodes[i].Trigger = c.Nodes[i].RuleOf()
	}
	if c.MaxConcurrentRuns == 0 {
		c.MaxConcurrentRuns = 1
	}
	if err := c.Validate(r.clk.Now(), time.UTC, nil); err != nil {
		r.t.Fatal(err)
	}
	if err := r.reg.Flows().AddWorkflow(r.ctx, c); err != nil {
		r.t.Fatal(err)
	}
	if err := r.eng.reloadDef(r.ctx, c.Name); err != nil {
		r.t.Fatal(err)
	}
}

// trigger creates a run as the API does.
func (r *rig) trigger(wf string, param *string) string {
	r.t.Helper()
	c, err := r.reg.Flows().Workflow(r.ctx, wf)
	if err != nil {
		r.t.Fatal(err)
	}
	now := r.clk.Now()
	id, _, err := r.reg.Flows().CreateWorkflowRun(r.ctx, workflow.NewRun(c, workflow.NewRunID(now, ""), workflow.SourceAPI, param, "", now), 0)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.dirty[runRef{wf, id}] = true
	r.clk.Advance(time.Millisecond) // distinct creation times
	return id
}

func (r *rig) run(wf, id string) workflow.Run {
	r.t.Helper()
	run, err := r.reg.Flows().WorkflowRun(r.ctx, wf, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

// pending lists the keys of a job's queued executions.
func (r *rig) pending(job string) []queue.PendingRun {
	r.t.Helper()
	q, err := r.reg.Work().ReadyQueue(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rd := range q {
		if rd.Job == job {
			if rd.Count != len(rd.Runs) {
				r.t.Fatalf("ready entry of %s: count %d, %d runs", job, rd.Count, len(rd.Runs))
			}
			return rd.Runs
		}
	}
	return nil
}

// execute plays the scheduler for a job's oldest queued execution: it is
// dequeued and its one shard ends in state with outputs. It returns the
// execution's key.
func (r *rig) execute(job, state string, outputs map[string]string) string {
	r.t.Helper()
	key := r.launch(job)
	r.end(job, key, state, outputs)
	return key
}

// launch dequeues a job's oldest execution and records its running task.
func (r *rig) launch(job string) string {
	r.t.Helper()
	runs := r.pending(job)
	if len(runs) == 0 {
		r.t.Fatalf("job %s has nothing queued", job)
	}
	key := runs[0].IdempotencyKey
	q, _ := r.reg.Work().ReadyQueue(r.ctx)
	for _, rd := range q {
		if rd.Job == job {
			rt := task.Entry{TaskID: job + "@-@0@-@READY@-@a1@-@" + key, AgentID: "a1", State: "TASK_RUNNING", RunKey: key, LaunchedAt: r.clk.Now()}
			if err := r.reg.Change().
				Dequeue(rd, r.clk.Now()).
				Launch(job, 0, rt).
				Commit(r.ctx); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	return key
}

// end ends a launched execution's shard.
func (r *rig) end(job, key, state string, outputs map[string]string) {
	r.t.Helper()
	rec, err := r.reg.Work().RunRecordOf(r.ctx, key)
	if err != nil {
		r.t.Fatal(err)
	}
	now := r.clk.Now().UTC()
	rec.Shards = []task.ShardOutcome{{Item: 0, TaskID: job + "@-@0@-@READY@-@a1@-@" + key, State: task.State(state),
		StartedAt: now.Add(-time.Second), EndedAt: now, Outputs: outputs}}
	rec.Done, rec.Success, rec.EndedAt = true, state == "TASK_FINISHED", now
	if err := r.reg.Change().Unlaunch(job, 0).RecordRun(key, rec).Commit(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) nodeStates(run workflow.Run) map[string]workflow.NodeState {
	out := map[string]workflow.NodeState{}
	for _, n := range run.Nodes {
		out[n.ID] = n.State
	}
	return out
}

func (r *rig) wantStates(run workflow.Run, want map[string]workflow.NodeState) {
	r.t.Helper()
	got := r.nodeStates(run)
	for id, st := range want {
		if got[id] != st {
			r.t.Fatalf("node %s is %s, want %s (all: %v)", id, got[id], st, got)
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, registry.ErrRunNotFound) }

func chain(name string, jobsOf ...string) workflow.Config {
	c := workflow.Default()
	c.Name = name
	for i, j := range jobsOf {
		n := workflow.Node{ID: j, Job: j}
		if i > 0 {
			n.DependsOn = []string{jobsOf[i-1]}
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c
}
