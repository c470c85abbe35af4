package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// Subject is one fresh engine under test.
type Subject struct {
	Driver engine.Driver
	// Run feeds h until ctx ends: the engine's event stream (mesos.Client.Run, kube.Engine.Run).
	Run func(ctx context.Context, h engine.Handler) error
	// Start plays a launched task's executor reporting it RUNNING, for an engine that
	// learns it from the executor over the scheduler's API (Kubernetes); nil: the engine
	// reports it on its own.
	Start func(ctx context.Context, taskID string) error
	// Finish plays a running task ending successfully (its executor's report, or the
	// simulated task's time passing).
	Finish func(ctx context.Context, taskID string) error
}

// Factory starts a fresh Subject for one check; it stops it with t.Cleanup.
type Factory func(t *testing.T) Subject

// Wait bounds every wait for an event of the engine: a failing check, not a timing one.
const Wait = 30 * time.Second

// Run runs every contract check on fresh subjects of f.
func Run(t *testing.T, f Factory) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, r *run)
	}{
		{"SubscribesAndOffers", subscribesAndOffers},
		{"LaunchRunsToTerminal", launchRunsToTerminal},
		{"KillEndsTask", killEndsTask},
		{"ReconcileAnswersUnknownTask", reconcileUnknown},
		{"ImplicitReconcileAnswersRunningTask", reconcileImplicit},
		{"DeclineThenRevive", declineThenRevive},
		{"ExecutorSharingHonoured", executorSharing},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, start(t, f)) })
	}
}

// run is a started subject and what its handler recorded.
type run struct {
	Subject
	ctx context.Context
	h   *recorder
	fw  string
}

func start(t *testing.T, f Factory) *run {
	t.Helper()
	s := f(t)
	ctx, cancel := context.WithCancel(context.Background())
	h := newRecorder()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(Wait):
			t.Errorf("Run did not return %v after its context ended", Wait)
		}
	})
	r := &run{Subject: s, ctx: ctx, h: h}
	select {
	case r.fw = <-h.subscribed:
	case err := <-done:
		t.Fatalf("Run ended before Subscribed: %v", err)
	case <-time.After(Wait):
		t.Fatalf("no Subscribed within %v", Wait)
	}
	return r
}

// offer waits for an offer (of agent, when not "").
func (r *run) offer(t *testing.T, agent string) engine.Offer {
	t.Helper()
	deadline := time.After(Wait)
	for {
		select {
		case os := <-r.h.offers:
			for _, o := range os {
				if agent == "" || o.AgentID == agent {
					return o
				}
			}
		case <-deadline:
			t.Fatalf("no offer (agent %q) within %v", agent, Wait)
		}
	}
}

// update waits for the next status update of taskID.
func (r *run) update(t *testing.T, taskID string) engine.Status {
	t.Helper()
	deadline := time.After(Wait)
	for {
		select {
		case s := <-r.h.updates(taskID):
			return s
		case <-deadline:
			t.Fatalf("no status update of %s within %v", taskID, Wait)
		}
	}
}

// until waits for an update of taskID in state want; every update before it must be
// non-terminal (a task has one end).
func (r *run) until(t *testing.T, taskID string, want task.State) engine.Status {
	t.Helper()
	for {
		s := r.update(t, taskID)
		if s.State == want {
			return s
		}
		if s.State.Terminal() {
			t.Fatalf("task %s ended %s (%s: %s), want %s", taskID, s.State, s.Reason, s.Message, want)
		}
	}
}

// Launch is the launch of a task of job j, shard item, on offer o.
func Launch(o engine.Offer, j string, item int, executor string) engine.TaskLaunch {
	id := jobs.NewTaskID(j, item, jobs.KindReady, o.AgentID).String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ExecutionSource: jobs.SourceNormal,
		ShardingContext: jobs.ShardingContext{JobName: j, TaskID: id, ShardingItem: item, ShardingTotalCount: 2},
		Job:             jobs.Config{JobName: j, AppName: "a", JobExecutionType: jobs.Transient, ShardingTotalCount: 2},
		App:             app.Config{AppName: "a", AppURL: "http://127.0.0.1:1/a.tar.gz"}}
	return engine.TaskLaunch{TaskID: id, AgentID: o.AgentID, CPUs: 0.25, MemMB: 64, Task: td,
		Executor: engine.ExecutorSpec{ID: executor, Name: "a", CPUs: 0.1, MemMB: 32, Command: "true", Shell: true}}
}

// running launches one task on an offer and waits for it to run.
func (r *run) running(t *testing.T, j string) engine.TaskLaunch {
	t.Helper()
	o := r.offer(t, "")
	l := Launch(o, j, 0, jobs.ExecutorID("a", o.AgentID))
	if err := r.Driver.Accept(r.ctx, []string{o.ID}, []engine.TaskLaunch{l}, -1); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	r.start(t, l.TaskID)
	r.until(t, l.TaskID, task.Running)
	return l
}

func (r *run) start(t *testing.T, id string) {
	t.Helper()
	if r.Start != nil {
		if err := r.Start(r.ctx, id); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
}

func subscribesAndOffers(t *testing.T, r *run) {
	if r.fw == "" {
		t.Error("Subscribed with no framework id")
	}
	o := r.offer(t, "")
	if o.ID == "" || o.AgentID == "" || o.CPUs <= 0 || o.MemMB <= 0 {
		t.Errorf("offer %+v: want an id, an agent and resources", o)
	}
}

func launchRunsToTerminal(t *testing.T, r *run) {
	l := r.running(t, "launch")
	if err := r.Finish(r.ctx, l.TaskID); err != nil {
		t.Fatalf("finish: %v", err)
	}
	s := r.until(t, l.TaskID, task.Finished)
	if s.AgentID != l.AgentID {
		t.Errorf("terminal update on agent %q, want %q", s.AgentID, l.AgentID)
	}
}

func killEndsTask(t *testing.T, r *run) {
	l := r.running(t, "kill")
	if err := r.Driver.Kill(r.ctx, l.TaskID, l.AgentID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	r.until(t, l.TaskID, task.Killed)
}

func reconcileUnknown(t *testing.T, r *run) {
	o := r.offer(t, "")
	id := jobs.NewTaskID("ghost", 0, jobs.KindReady, o.AgentID).String()
	if err := r.Driver.Reconcile(r.ctx, []engine.TaskRef{{TaskID: id, AgentID: o.AgentID}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	s := r.update(t, id)
	t.Logf("a task never run is answered %s (%s)", s.State, s.Source)
	if !s.State.Terminal() || s.Reason != task.ReasonReconciliation {
		t.Errorf("answer for a task the engine never ran: %s (%s), want a terminal state with reason %s", s.State, s.Reason, task.ReasonReconciliation)
	}
}

func reconcileImplicit(t *testing.T, r *run) {
	l := r.running(t, "implicit")
	if err := r.Driver.Reconcile(r.ctx, nil); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	s := r.update(t, l.TaskID)
	if s.State != task.Running || s.Reason != task.ReasonReconciliation {
		t.Errorf("implicit answer for a running task: %s (%s), want %s (%s)", s.State, s.Reason, task.Running, task.ReasonReconciliation)
	}
}

func declineThenRevive(t *testing.T, r *run) {
	o := r.offer(t, "")
	if err := r.Driver.Decline(r.ctx, []string{o.ID}, time.Hour); err != nil {
		t.Fatalf("Decline: %v", err)
	}
	if err := r.Driver.Revive(r.ctx); err != nil {
		t.Fatalf("Revive: %v", err)
	}
	if again := r.offer(t, o.AgentID); again.ID == "" {
		t.Errorf("no offer after Revive: %+v", again)
	}
}

// executorSharing launches two tasks of one app in one Accept: with ExecutorSharing both
// name the same executor (one per app and agent), without it each its own; both run.
func executorSharing(t *testing.T, r *run) {
	caps := r.Driver.Capabilities()
	if caps.InFlight() < 1 {
		t.Fatalf("InFlight %d", caps.InFlight())
	}
	o := r.offer(t, "")
	exec := jobs.ExecutorID("a", o.AgentID)
	a, b := Launch(o, "shared", 0, exec), Launch(o, "shared", 1, exec)
	if !caps.ExecutorSharing {
		b.Executor.ID = exec + "-" + fmt.Sprint(1)
	}
	if err := r.Driver.Accept(r.ctx, []string{o.ID}, []engine.TaskLaunch{a, b}, -1); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	for _, l := range []engine.TaskLaunch{a, b} {
		r.start(t, l.TaskID)
		r.until(t, l.TaskID, task.Running)
	}
}
