package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// launched registers app+job, triggers and launches, returning the tasks.
func launched(t *testing.T, mod func(*jobs.Config)) (*rig, map[int]task.Entry) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(mod)
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) == 0 {
		t.Fatal("nothing launched")
	}
	return r, run
}

func TestRunningThenFinished(t *testing.T) {
	r, run := launched(t, nil)
	r.status(run[0].TaskID, "TASK_STARTING")
	r.status(run[0].TaskID, "TASK_RUNNING")
	if got := r.running("job")[0].State; got != "TASK_RUNNING" {
		t.Fatalf("state = %s", got)
	}
	r.status(run[0].TaskID, "TASK_FINISHED")
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("finished task still running")
	}
	if len(r.running("job")) != 2 {
		t.Fatal("siblings were removed")
	}
	fo, _ := r.reg.Work().FailoverQueue(r.ctx)
	if len(fo) != 0 {
		t.Fatal("a finished task went to failover")
	}
}

func TestFailureGoesToFailoverAndRelaunchesOnlyThatShard(t *testing.T) {
	for _, state := range []string{"TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN"} {
		t.Run(state, func(t *testing.T) {
			r, run := launched(t, func(j *jobs.Config) { j.Failover = true })
			r.status(run[1].TaskID, state)
			fo, err := r.reg.Work().FailoverQueue(r.ctx)
			if err != nil || len(fo) != 1 || fo[0].Item != 1 || fo[0].TaskID != run[1].TaskID {
				t.Fatalf("failover = %+v %v", fo, err)
			}
			r.offer("o2", 8, 4096)
			r.sched.launcher.round(r.ctx)
			last := r.drv.accepts[len(r.drv.accepts)-1]
			if len(r.drv.accepts) != 2 || len(last.launches) != 1 {
				t.Fatalf("accepts = %+v", r.drv.accepts)
			}
			tid, _ := jobs.ParseTaskID(last.launches[0].TaskID)
			d := last.launches[0].Task
			if tid.Kind != jobs.KindFailover || tid.Item != 1 || d.ExecutionSource != jobs.SourceFailover {
				t.Fatalf("failover launch %+v source %s", tid, d.ExecutionSource)
			}
			if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
				t.Fatal("failover entry not consumed")
			}
		})
	}
}

func TestFailureWithoutFailoverIsDropped(t *testing.T) {
	r, run := launched(t, nil)
	r.status(run[0].TaskID, "TASK_STARTING")
	r.status(run[0].TaskID, "TASK_FAILED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatal("failover=false job went to failover")
	}
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("failed task still running")
	}
}

func TestReadyWaitsForFailoverOfTheSameJob(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.Failover = true; j.ShardingTotalCount = 2 })
	r.status(run[0].TaskID, "TASK_FAILED")
	r.status(run[1].TaskID, "TASK_FINISHED")
	r.trigger("job")
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	last := r.drv.accepts[len(r.drv.accepts)-1]
	if len(last.launches) != 1 {
		t.Fatalf("launched %d tasks, want only the failover shard", len(last.launches))
	}
	if r.readyCount("job") != 1 {
		t.Fatal("the new execution must wait for the failover shard")
	}
}

func TestUpdateForUnknownTaskKillsIt(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	orphan := jobs.NewTaskID("job", 0, jobs.KindReady, "agent-1").String()
	r.status(orphan, "TASK_RUNNING")
	if len(r.drv.kills) != 1 || r.drv.kills[0] != orphan {
		t.Fatalf("kills = %v", r.drv.kills)
	}
	r.status(orphan, "TASK_FINISHED") // terminal: only acknowledged
	if len(r.drv.kills) != 1 {
		t.Fatal("killed a finished task")
	}
	r.status("not-a-task-id", "TASK_RUNNING")
}

func TestStaleUpdateDoesNotTouchTheCurrentTask(t *testing.T) {
	r, run := launched(t, nil)
	old := jobs.NewTaskID("job", 0, jobs.KindReady, "agent-1").String()
	r.status(old, "TASK_FAILED")
	if got := r.running("job")[0].TaskID; got != run[0].TaskID {
		t.Fatalf("running task replaced by a stale update: %s", got)
	}
}

func TestKilledDaemonIsQueuedAgain(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) {
		j.JobExecutionType = jobs.Daemon
		j.Cron = "0/5 * * * * ?"
		j.ShardingTotalCount = 1
	})
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.status(run[0].TaskID, "TASK_KILLED")
	if r.readyCount("job") != 1 {
		t.Fatal("killed daemon job was not queued again")
	}
}

func TestFailedDaemonGoesToFailoverEvenWithoutFlag(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) {
		j.JobExecutionType = jobs.Daemon
		j.Cron = "0/5 * * * * ?"
		j.ShardingTotalCount = 1
	})
	r.status(run[0].TaskID, "TASK_LOST")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 {
		t.Fatal("lost daemon task not in failover")
	}
}

func TestUnreachableIsKeptThenCountedLost(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.Failover = true })
	r.status(run[0].TaskID, "TASK_UNREACHABLE")
	if got := r.running("job")[0].State; got != "TASK_UNREACHABLE" {
		t.Fatalf("state = %s", got)
	}
	r.clk.Advance(r.sched.deps.Options.Unreachable)
	r.sched.recon.periodic(r.ctx)
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("task unreachable forever")
	}
	if len(r.drv.kills) != 1 {
		t.Fatalf("kills = %v", r.drv.kills)
	}
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 {
		t.Fatal("lost task not failed over")
	}
}

// A task whose whole cluster was lost counts lost past that cluster's own bound
// (lost_after), not task_unreachable_timeout; one whose agent alone was lost, or of a
// cluster with no bound of its own, past task_unreachable_timeout.
func TestLostClusterHasItsOwnBound(t *testing.T) {
	for _, c := range []struct {
		name    string
		lost    string        // the status's LostCluster
		advance time.Duration // then periodic runs
		gone    bool
	}{
		{"its cluster's bound", "mesos", 2 * time.Minute, true},
		{"just before its cluster's bound", "mesos", 2*time.Minute - time.Second, false},
		{"its agent alone: the global bound", "", 2 * time.Minute, false},
		{"a cluster with no bound of its own", "k8s", 2 * time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, run := launched(t, func(j *jobs.Config) { j.Failover = true })
			r.sched.recon.opts.ClusterLostAfter = map[string]time.Duration{"mesos": 2 * time.Minute}
			if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: task.Unreachable,
				Source: task.SourceMaster, UnreachableSince: r.clk.Now(), LostCluster: c.lost}); err != nil {
				t.Fatal(err)
			}
			r.clk.Advance(c.advance)
			r.sched.recon.periodic(r.ctx)
			if _, running := r.running("job")[0]; running == c.gone {
				t.Fatalf("after %s: still running %v, want %v", c.advance, running, !c.gone)
			}
			if !c.gone {
				r.clk.Advance(r.sched.recon.opts.Unreachable)
				r.sched.recon.periodic(r.ctx)
				if _, running := r.running("job")[0]; running {
					t.Fatal("still running past task_unreachable_timeout")
				}
			}
			if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 {
				t.Fatal("lost task not failed over")
			}
		})
	}
	if d := (&Scheduler{deps: Deps{Options: Options{Unreachable: 10 * time.Minute, ClusterLostAfter: map[string]time.Duration{"mesos": time.Minute}}}}).tickEvery(); d != 15*time.Second {
		t.Errorf("tick every %s, want 15s (a quarter of the shortest bound)", d)
	}
}

// A new leader's reconciliation is answered TASK_UNREACHABLE again, with
// the time Mesos lost the agent: task_unreachable_timeout counts from
// then, not from the answer (else each new leader starts the timeout
// over, and a run of takeovers keeps the task from being counted lost).
func TestUnreachableCountsFromWhenTheAgentWasLost(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.Failover = true })
	lost := r.clk.Now().Add(-r.sched.deps.Options.Unreachable)
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: task.Unreachable,
		Reason: task.ReasonReconciliation, UnreachableSince: lost}); err != nil {
		t.Fatal(err)
	}
	r.sched.recon.periodic(r.ctx)
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("unreachable for the whole timeout by the engine's clock, still running")
	}
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 {
		t.Fatal("lost task not failed over")
	}
}

// Real Mesos: a launch sent just before its agent was lost
// never reported starting; its task went UNREACHABLE from STAGING (the
// mark says so, for the next leader too), and, counted lost, it is not run
// again without failover (it may have started on the agent): history
// hears why. TASK_DROPPED of such a task (Mesos: never launched) runs it
// again.
func TestLostBeforeItStartedIsRecordedNotRunAgain(t *testing.T) {
	r, run := launched(t, nil)
	obs := &statusRecorder{}
	r.sched.status.obs = obs
	lost := r.clk.Now().Add(-r.sched.deps.Options.Unreachable)
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: task.Unreachable,
		Source: task.SourceMaster, UnreachableSince: lost}); err != nil {
		t.Fatal(err)
	}
	if e := r.running("job")[0]; e.State != task.Unreachable || !e.StagingWhenLost {
		t.Fatalf("entry %s, staging when lost %v", e.State, e.StagingWhenLost)
	}
	r.sched.recon.periodic(r.ctx)
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("unreachable for the whole timeout, still running")
	}
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatalf("run again without failover: %+v", fo)
	}
	last := obs.states[len(obs.states)-1]
	if last.State != task.Lost || !strings.Contains(last.Message, task.LostBeforeStartWords) || !strings.Contains(last.Message, task.NotRunAgainWords) {
		t.Errorf("history hears %s %q", last.State, last.Message)
	}

	r, run = launched(t, nil)
	r.status(run[0].TaskID, "TASK_UNREACHABLE")
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: task.Dropped,
		Source: task.SourceMaster, Reason: task.ReasonReconciliation}); err != nil {
		t.Fatal(err)
	}
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 {
		t.Fatal("TASK_DROPPED of a task lost while staging: not run again")
	}
}

// An unreachable time in the future (a clock ahead) counts from now.
func TestUnreachableSinceIsNeverAhead(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	if got := unreachableSince(engine.Status{UnreachableSince: now.Add(time.Minute)}, now); !got.Equal(now) {
		t.Errorf("ahead: %v", got)
	}
	if got := unreachableSince(engine.Status{}, now); !got.Equal(now) {
		t.Errorf("unknown: %v", got)
	}
	if got := unreachableSince(engine.Status{UnreachableSince: now.Add(-time.Minute)}, now); !got.Equal(now.Add(-time.Minute)) {
		t.Errorf("a minute ago: %v", got)
	}
}

func TestDisableKillsAndClearsQueues(t *testing.T) {
	r, run := launched(t, nil)
	r.trigger("job")
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "job", true, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJobDisabled, Name: "job"})
	if len(r.drv.kills) != len(run) {
		t.Fatalf("kills = %v, want %d", r.drv.kills, len(run))
	}
	if r.readyCount("job") != 0 {
		t.Fatal("ready queue not cleared")
	}
	for _, rt := range run {
		r.status(rt.TaskID, "TASK_KILLED")
	}
	if len(r.running("job")) != 0 {
		t.Fatal("killed tasks still running")
	}
}

func TestAppDeleteStopsItsExecutors(t *testing.T) {
	r, _ := launched(t, nil)
	if _, err := r.reg.Config().DeleteApp(r.ctx, "app"); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigApp, Name: "app"})
	if len(r.drv.shutdowns) != 1 || r.drv.shutdowns[0] != "app@-@agent-1" {
		t.Fatalf("shutdowns = %v", r.drv.shutdowns)
	}
}

func TestSubscribeReconcilesRunningTasks(t *testing.T) {
	r, run := launched(t, nil)
	r.sched.Subscribed(r.ctx, "fw-1")
	r.sched.handleUpdates(r.ctx) // the stream's queued events
	if id, _ := r.reg.Term().FrameworkID(r.ctx); id != "fw-1" {
		t.Fatalf("framework id = %q", id)
	}
	if len(r.drv.reconciles) != 2 || len(r.drv.reconciles[0]) != len(run) || len(r.drv.reconciles[1]) != 0 {
		t.Fatalf("reconciles = %+v", r.drv.reconciles)
	}
}

// TestSubscriptionPersistsOnlyANewFrameworkID: a term persists the framework id it
// subscribed under only when the registry does not hold it (read at the term's start,
// Options.FrameworkID, or written by the term already): a takeover's subscription under the
// stored id makes no registry write on its way to the first launch.
func TestSubscriptionPersistsOnlyANewFrameworkID(t *testing.T) {
	r := newRig(t)
	version := func() int64 {
		t.Helper()
		n, err := r.kv.Get(r.ctx, "/ha/framework_id")
		if err != nil {
			t.Fatal(err)
		}
		return n.Version
	}
	r.sched.recon.subscribed(r.ctx, "fw-1") // none stored: written
	v1 := version()
	r.sched.recon.subscribed(r.ctx, "fw-1") // the term's re-subscription
	if v := version(); v != v1 {
		t.Fatalf("a re-subscription under the id it wrote wrote it again: version %d → %d", v1, v)
	}
	r.rebuild(func(d *Deps) { d.Options.FrameworkID = "fw-1" }) // the next term read it at its start
	r.sched.recon.subscribed(r.ctx, "fw-1")
	if v := version(); v != v1 {
		t.Fatalf("a takeover under the stored id wrote it: version %d → %d", v1, v)
	}
	if len(r.drv.reconciles) == 0 {
		t.Fatal("the subscription reconciled nothing")
	}
	r.sched.recon.subscribed(r.ctx, "fw-2") // the engine gave another id: written
	if id, err := r.reg.Term().FrameworkID(r.ctx); err != nil || id != "fw-2" || version() == v1 {
		t.Fatalf("framework id %q (%v), version %d, want fw-2 written", id, err, version())
	}
}

func TestTaskThatNeverStartedIsRetriedABoundedNumberOfTimes(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	id := run[0].TaskID
	for attempt := 1; attempt <= task.MaxNeverStartedRetries; attempt++ {
		r.status(id, "TASK_FAILED") // the executor went away before STARTING
		fo, _ := r.reg.Work().FailoverQueue(r.ctx)
		if len(fo) != 1 || fo[0].Attempts != attempt {
			t.Fatalf("attempt %d: failover = %+v", attempt, fo)
		}
		r.offer("o", 8, 4096)
		r.sched.launcher.round(r.ctx)
		id = r.running("job")[0].TaskID
	}
	r.status(id, "TASK_FAILED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatalf("retried past the bound: %+v", fo)
	}
}

func TestInvalidTaskIsNotRetried(t *testing.T) {
	r, run := launched(t, nil)
	r.status(run[0].TaskID, "TASK_ERROR")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatal("TASK_ERROR retried")
	}
}

func TestMaxRetriesWithBackoff(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 1; j.MaxRetries = 2; j.RetryBackoffSeconds = 10 })
	task := run[0].TaskID
	for attempt, wait := range []time.Duration{10 * time.Second, 20 * time.Second} {
		r.status(task, "TASK_RUNNING")
		r.status(task, "TASK_FAILED")
		fo, _ := r.reg.Work().FailoverQueue(r.ctx)
		if len(fo) != 1 || !fo[0].NotBefore.Equal(r.clk.Now().Add(wait)) {
			t.Fatalf("attempt %d: failover %+v, want a retry after %v", attempt, fo, wait)
		}
		r.offer("o", 8, 4096)
		r.sched.launcher.round(r.ctx)
		if len(r.running("job")) != 0 {
			t.Fatal("retried before its backoff")
		}
		r.clk.Advance(wait)
		r.offer("o2", 8, 4096) // the idle round declined the first offer
		r.sched.launcher.round(r.ctx)
		rt, ok := r.running("job")[0]
		if !ok {
			t.Fatalf("attempt %d: not relaunched after the backoff", attempt)
		}
		task = rt.TaskID
	}
	r.status(task, "TASK_RUNNING")
	r.status(task, "TASK_FAILED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatalf("retried past maxRetries: %+v", fo)
	}
}

func TestRepeatedFailoverBacksOff(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 1; j.Failover = true })
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.status(run[0].TaskID, "TASK_FAILED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 || !fo[0].NotBefore.IsZero() {
		t.Fatalf("first failover must be immediate: %+v", fo)
	}
	r.offer("o", 8, 4096)
	r.sched.launcher.round(r.ctx)
	second := r.running("job")[0].TaskID
	r.status(second, "TASK_RUNNING")
	r.status(second, "TASK_FAILED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 || !fo[0].NotBefore.Equal(r.clk.Now().Add(time.Second)) {
		t.Fatalf("second failover must back off 1s: %+v", fo)
	}
}

func TestTriggeredParameterReachesTheTaskAndItsFailover(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1; j.Failover = true; j.JobParameter = "default" })
	if _, err := r.reg.Work().TriggerRun(r.ctx, "job", queue.PendingRun{JobParameter: "override"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	d := r.drv.accepts[0].launches[0].Task
	if d.ShardingContext.JobParameter != "override" || d.Job.JobParameter != "override" {
		t.Fatalf("parameter = %q", d.ShardingContext.JobParameter)
	}
	task := r.running("job")[0].TaskID
	r.status(task, "TASK_RUNNING")
	r.status(task, "TASK_LOST")
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	d = r.drv.accepts[1].launches[0].Task
	if d.ShardingContext.JobParameter != "override" || d.ExecutionSource != jobs.SourceFailover {
		t.Fatalf("failover parameter = %q source %s", d.ShardingContext.JobParameter, d.ExecutionSource)
	}
}

type recordingNotifier struct{ got []string }

func (n *recordingNotifier) Notify(job jobs.Config, ev observe.TaskEvent, st engine.Status) {
	n.got = append(n.got, job.JobName+" "+string(st.State)+" "+st.Message)
}

func TestWebhookNotifiedOnFailure(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) {
		j.JobErrorHandlerType = jobs.HandlerWebhook
		j.Props = map[string]string{"webhook.url": "http://127.0.0.1:1/hook"}
	})
	n := &recordingNotifier{}
	r.sched.status.notifier = n
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.status(run[0].TaskID, "TASK_FINISHED")
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[1].TaskID, State: "TASK_FAILED", Message: "exit code 2"}); err != nil {
		t.Fatal(err)
	}
	if len(n.got) != 1 || n.got[0] != "job TASK_FAILED exit code 2" {
		t.Fatalf("notifications = %v", n.got)
	}
}

type daemonRecorder struct {
	nopTasks
	runs []jobs.DaemonReport
}

func (d *daemonRecorder) DaemonRun(_ observe.TaskEvent, rep jobs.DaemonReport) {
	d.runs = append(d.runs, rep)
}

func TestDaemonReportsMarkBusyAndIdle(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) {
		j.JobExecutionType = jobs.Daemon
		j.Cron = "0/5 * * * * ?"
		j.ShardingTotalCount = 1
	})
	obs := &daemonRecorder{}
	r.sched.status.obs = obs
	task := run[0].TaskID
	r.status(task, "TASK_RUNNING")
	report := func(typ string) {
		rep := jobs.DaemonReport{Type: typ, TaskID: task, RunID: "r1", StartTime: t0}
		r.sched.Message(r.ctx, "agent-1", "app@-@agent-1", rep.Marshal())
		r.sched.handleUpdates(r.ctx) // the stream's queued events
	}
	report(jobs.DaemonBegin)
	if !r.running("job")[0].Busy {
		t.Fatal("not busy after BEGIN")
	}
	report(jobs.DaemonComplete)
	if r.running("job")[0].Busy {
		t.Fatal("still busy after COMPLETE")
	}
	if len(obs.runs) != 2 || obs.runs[1].Type != jobs.DaemonComplete {
		t.Fatalf("observed %+v", obs.runs)
	}
	r.sched.Message(r.ctx, "agent-1", "x", []byte("not json")) // ignored, nothing queued
	if len(r.sched.inbox) != 0 {
		t.Fatal("a bad message reached the loop")
	}
}

func TestFailedDaemonRunNotifiesAndDefaultZoneReachesTheTask(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.Location = mustZone(t, "Asia/Shanghai")
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {
		j.JobExecutionType, j.Cron, j.ShardingTotalCount = jobs.Daemon, "0/5 * * * * ?", 1
		j.JobErrorHandlerType = jobs.HandlerWebhook
		j.Props = map[string]string{"webhook.url": "http://127.0.0.1:1/hook"}
	})
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	d := r.drv.accepts[0].launches[0].Task
	if d.Job.TimeZone != "Asia/Shanghai" {
		t.Fatalf("task time zone %q, want the scheduler's", d.Job.TimeZone)
	}
	n := &recordingNotifier{}
	r.sched.status.notifier = n
	task := r.running("job")[0].TaskID
	r.status(task, "TASK_RUNNING")
	rep := jobs.DaemonReport{Type: jobs.DaemonComplete, TaskID: task, RunID: "r", Message: "exit code 1"}
	r.sched.Message(r.ctx, "agent-1", "app@-@agent-1", rep.Marshal())
	r.sched.handleUpdates(r.ctx) // the stream's queued events
	if len(n.got) != 1 || n.got[0] != "job DAEMON_RUN_FAILED exit code 1" {
		t.Fatalf("notifications %v", n.got)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestStaleUpdateOvertakenByReconciliationIsNotKilled: the master answers a
// reconciliation with a task's latest state, which can arrive before the
// agent's earlier updates that still wait for their acknowledgement. A
// stale RUNNING after a FINISHED answer is acknowledged, not killed; after
// a LOST answer the task may still run, so a live update kills it.
func TestStaleUpdateOvertakenByReconciliationIsNotKilled(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 2 })
	answer := func(taskID, state string) {
		t.Helper()
		if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: "agent-1", State: task.State(state),
			Reason: "REASON_RECONCILIATION", Message: "Reconciliation: Latest task state"}); err != nil {
			t.Fatal(err)
		}
	}
	answer(run[0].TaskID, "TASK_FINISHED")
	answer(run[1].TaskID, "TASK_LOST")
	if len(r.running("job")) != 0 {
		t.Fatalf("still running: %+v", r.running("job"))
	}
	r.status(run[0].TaskID, "TASK_RUNNING") // stale: the agent's stream catching up
	r.status(run[0].TaskID, "TASK_FINISHED")
	if len(r.drv.kills) != 0 {
		t.Fatalf("a task that finished was killed: %v", r.drv.kills)
	}
	r.status(run[1].TaskID, "TASK_RUNNING")
	if len(r.drv.kills) != 1 || r.drv.kills[0] != run[1].TaskID {
		t.Fatalf("kills = %v, want the lost task's", r.drv.kills)
	}
	r.status(run[0].TaskID, "TASK_RUNNING") // its stream ended: a live update now is an orphan
	if len(r.drv.kills) != 2 {
		t.Fatalf("kills = %v", r.drv.kills)
	}
}

// TestExecutorFailureOfAStagingTaskIsTheJobs: the executor sends STARTING
// only when a task is slow to start, so its own FAILED of a task still
// STAGING (an app that failed at once) is the job's failure, not a task
// that never began; its refusal while shutting down is one.
func TestExecutorFailureOfAStagingTaskIsTheJobs(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 2 })
	fail := func(taskID, reason string) {
		t.Helper()
		if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: "agent-1", State: "TASK_FAILED",
			Source: task.SourceExecutor, Reason: task.Reason(reason)}); err != nil {
			t.Fatal(err)
		}
	}
	fail(run[0].TaskID, "")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 0 {
		t.Fatalf("the job's own failure retried as never started: %+v", fo)
	}
	fail(run[1].TaskID, "REASON_EXECUTOR_TERMINATED")
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 || fo[0].TaskID != run[1].TaskID {
		t.Fatalf("a task refused by a stopping executor not retried: %+v", fo)
	}
}

// TestHostileDaemonReportFromAnotherExecutor: a daemon report names its
// task in its data; one that comes from an executor other than the one
// the task runs in (another app's, another namespace's, with the task id
// read from the host's cgroup names) neither marks the task busy nor
// notifies nor counts a failed run toward pausing its job. The task's own
// executor's report does.
func TestHostileDaemonReportFromAnotherExecutor(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) {
		j.JobExecutionType = jobs.Daemon
		j.Cron = "0/5 * * * * ?"
		j.ShardingTotalCount = 1
		j.JobErrorHandlerType = jobs.HandlerWebhook
		j.Props = map[string]string{"webhook.url": "http://127.0.0.1:1/hook"}
	})
	n := &recordingNotifier{}
	r.sched.status.notifier = n
	task := run[0].TaskID
	r.status(task, "TASK_RUNNING")
	own := r.running("job")[0].ExecutorID
	if own == "" {
		t.Fatal("the running entry names no executor")
	}
	send := func(executor, typ string) {
		rep := jobs.DaemonReport{Type: typ, TaskID: task, RunID: "r1", StartTime: t0, Message: "forged"}
		r.sched.Message(r.ctx, "agent-1", executor, rep.Marshal())
		r.sched.handleUpdates(r.ctx)
	}
	send("other@-@agent-1", jobs.DaemonBegin)
	if r.running("job")[0].Busy {
		t.Fatal("another executor's BEGIN marked the task busy")
	}
	send("other@-@agent-1", jobs.DaemonComplete)
	if len(n.got) != 0 {
		t.Fatalf("another executor's failed COMPLETE notified: %v", n.got)
	}
	send(own, jobs.DaemonBegin)
	if !r.running("job")[0].Busy {
		t.Fatal("the task's own executor's BEGIN did not mark it busy")
	}
	send(own, jobs.DaemonComplete)
	if len(n.got) != 1 {
		t.Fatalf("the task's own failed COMPLETE: notifications %v", n.got)
	}
}
