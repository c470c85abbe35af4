package task

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func entry(state State, attempts int) *Entry {
	return &Entry{TaskID: "t1", State: state, Attempts: attempts, RunKey: "k"}
}

// TestTransition walks the state machine's table (scheduler/README.md).
func TestTransition(t *testing.T) {
	runnable := Job{Exists: true, Runnable: true}
	dup := Update{State: Error, Reason: ReasonTaskInvalid, Source: SourceMaster, Message: "Task has duplicate ID: j@-@0@-@READY@-@@-@u"}
	cases := []struct {
		name string
		in   Input
		want func(Outcome) bool
	}{
		{"a refused duplicate launch leaves the running task alone", Input{Update: dup, Entry: entry(Running, 0), Job: Job{Exists: true, Runnable: true, Failover: true}},
			func(o Outcome) bool { return o == Outcome{Stale: true} }},
		{"a refused duplicate of a staging task does not end it", Input{Update: dup, Entry: entry(Staging, 0), Job: Job{Exists: true, Runnable: true, Daemon: true}},
			func(o Outcome) bool { return o == Outcome{Stale: true} }},
		{"a refused duplicate of an unknown task kills nothing", Input{Update: dup, Job: runnable},
			func(o Outcome) bool { return o == Outcome{Stale: true} }},
		{"another invalid task still ends", Input{Update: Update{State: Error, Reason: ReasonTaskInvalid, Source: SourceMaster, Message: "Task uses invalid agent: a"}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.End != nil && o.End.Result == Failure }},
		{"a master refusing the offers of a staging task asks the engine", Input{Update: Update{State: Dropped, Reason: ReasonInvalidOffers, Source: SourceMaster}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o == Outcome{Stale: true, Reconcile: true} }},
		{"a master refusing the offers of a running task asks the engine", Input{Update: Update{State: Lost, Reason: ReasonInvalidOffers, Source: SourceMaster}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool { return o == Outcome{Stale: true, Reconcile: true} }},
		{"the Kubernetes engine's refused placement of a staging task ends it, never started: nothing to ask", Input{Update: Update{State: Dropped, Reason: ReasonPlacementRefused, Source: SourceMaster, Message: "kube-scheduler cannot bind the pod to node n1 (…); back to the queue"}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool {
				return !o.Reconcile && !o.Stale && o.End != nil && o.End.Retry != nil && o.End.Retry.Retry
			}},
		{"a refusal for offers of an unknown task is only acknowledged", Input{Update: Update{State: Dropped, Reason: ReasonInvalidOffers, Source: SourceMaster}, Job: runnable},
			func(o Outcome) bool { return o == Outcome{Stale: true} }},
		{"its reconciliation answer ends it", Input{Update: Update{State: Lost, Reason: ReasonReconciliation, Source: SourceMaster}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.End != nil && o.End.Retry != nil }},
		{"running marks", Input{Update: Update{State: Running}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.Mark != nil && o.Mark.State == Running && o.End == nil }},
		{"same state writes nothing", Input{Update: Update{State: Running}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool { return o == Outcome{} }},
		{"unreachable starts its timer", Input{Update: Update{State: Unreachable}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool { return o.Unreachable && o.Mark != nil }},
		{"finished ends the run", Input{Update: Update{State: Finished}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool {
				return o.End != nil && o.End.Result == Success && o.End.RunEnds && o.End.RecordDone && o.End.Retry == nil
			}},
		{"finished with another shard running", Input{Update: Update{State: Finished}, Entry: entry(Running, 0), Job: runnable, OthersRunning: true, RunPending: true},
			func(o Outcome) bool { return !o.End.RunEnds && !o.End.RecordDone }},
		{"killed daemon is queued again", Input{Update: Update{State: Killed}, Entry: entry(Running, 0), Job: Job{Exists: true, Runnable: true, Daemon: true}},
			func(o Outcome) bool { return o.End.Result == Stopped && o.End.RequeueDaemon && o.End.Retry == nil }},
		{"killed daemon of a disabled job is not", Input{Update: Update{State: Killed}, Entry: entry(Running, 0), Job: Job{Exists: true, Daemon: true}},
			func(o Outcome) bool { return !o.End.RequeueDaemon }},
		{"failure without failover ends the run failed", Input{Update: Update{State: Failed, Source: SourceExecutor}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool {
				return o.End.Result == Failure && o.End.Retry == nil && o.End.Notify && o.End.RunEnds
			}},
		{"never started: retried at once whatever the flag", Input{Update: Update{State: Failed, Source: "SOURCE_AGENT"}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool {
				return o.End.Result == Retrying && o.End.Retry.Retry && o.End.Retry.NotBefore.IsZero() && !o.End.RunEnds
			}},
		{"never started, a bounded number of times", Input{Update: Update{State: Failed, Source: "SOURCE_AGENT"}, Entry: entry(Staging, MaxNeverStartedRetries), Job: runnable},
			func(o Outcome) bool { return o.End.Retry == nil }},
		{"an executor's own failure of a staging task is the job's", Input{Update: Update{State: Failed, Source: SourceExecutor}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.End.Retry == nil && o.End.Result == Failure }},
		{"an executor shutting down refused it: never started", Input{Update: Update{State: Failed, Source: SourceExecutor, Reason: ReasonExecutorTerminated}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.End.Retry != nil && o.End.Retry.Retry }},
		{"TASK_ERROR is not retried", Input{Update: Update{State: Error, Source: "SOURCE_MASTER"}, Entry: entry(Staging, 0), Job: runnable},
			func(o Outcome) bool { return o.End.Retry == nil }},
		{"maxRetries: a retry within the run after its backoff", Input{Update: Update{State: Failed, Source: SourceExecutor}, Entry: entry(Running, 1),
			Job: Job{Exists: true, Runnable: true, MaxRetries: 2, RetryBackoff: 10 * time.Second}, Now: t0},
			func(o Outcome) bool {
				r := o.End.Retry
				return r != nil && r.Retry && r.Attempts == 2 && r.NotBefore.Equal(t0.Add(20*time.Second)) && o.End.Result == Retrying && !o.End.RunEnds
			}},
		{"failover: a relaunch in the next run, at once the first time", Input{Update: Update{State: Lost}, Entry: entry(Running, 0), Job: Job{Exists: true, Runnable: true, Failover: true}, Now: t0},
			func(o Outcome) bool {
				r := o.End.Retry
				return r != nil && !r.Retry && r.NotBefore.IsZero() && o.End.Result == Failure && o.End.RunEnds && !o.End.RecordDone
			}},
		{"failover backs off after the first", Input{Update: Update{State: Lost}, Entry: entry(Running, 3), Job: Job{Exists: true, Runnable: true, Failover: true}, Now: t0},
			func(o Outcome) bool { return o.End.Retry.NotBefore.Equal(t0.Add(4 * time.Second)) }},
		{"no retry for a job that may not run", Input{Update: Update{State: Failed, Source: "SOURCE_AGENT"}, Entry: entry(Staging, 0), Job: Job{Exists: true, Failover: true}},
			func(o Outcome) bool { return o.End.Retry == nil }},
		{"a reconciliation answer that ends the task overtakes", Input{Update: Update{State: Finished, Reason: ReasonReconciliation}, Entry: entry(Running, 0), Job: runnable},
			func(o Outcome) bool { return o.Overtaken && o.End != nil }},
		{"orphan that may run is killed", Input{Update: Update{State: Running}, Job: runnable},
			func(o Outcome) bool { return o.Stale && o.Kill }},
		{"orphan that ended is only acknowledged", Input{Update: Update{State: Finished}, Job: runnable},
			func(o Outcome) bool { return o.Stale && !o.Kill }},
		{"a stale live update after an overtaking answer is acknowledged", Input{Update: Update{State: Running}, Overtaken: true, Job: runnable},
			func(o Outcome) bool { return o.Stale && !o.Kill && !o.Forget }},
		{"the agent's own end forgets the overtaken task", Input{Update: Update{State: Finished}, Overtaken: true, Job: runnable},
			func(o Outcome) bool { return o.Stale && o.Forget }},
	}
	for _, c := range cases {
		if got := Transition(c.in); !c.want(got) {
			t.Errorf("%s: %+v (end %+v)", c.name, got, got.End)
		}
	}
}

func TestCountRun(t *testing.T) {
	now := t0
	rs, p, changed := CountRun(RunState{}, Success, "", true, 0, true, now)
	if changed || p != nil || rs != (RunState{}) {
		t.Fatalf("a healthy job's run wrote %+v", rs)
	}
	rs, _, _ = CountRun(rs, Failure, "boom", false, 0, true, now)
	rs, p, _ = CountRun(rs, Success, "", true, 0, true, now)
	if rs.Consecutive != 1 || rs.LastCause != "boom" || p != nil {
		t.Fatalf("after a failed run: %+v %v", rs, p)
	}
	rs, p, _ = CountRun(rs, Failure, "again", true, 2, true, now)
	if p == nil || p.FailedRuns != 2 || rs.Consecutive != 0 || p.Cause != "again" {
		t.Fatalf("pause %+v, state %+v", p, rs)
	}
	rs2, p, _ := CountRun(RunState{Consecutive: 1}, Failure, "x", true, 2, false, now)
	if p != nil || rs2.Consecutive != 2 {
		t.Fatalf("a job that may not run was paused: %+v %+v", p, rs2)
	}
}

func TestRecordShard(t *testing.T) {
	rec := RecordShard(RunRecord{}, "j", ShardOutcome{Item: 0, State: Failed}, false, t0)
	rec = RecordShard(rec, "j", ShardOutcome{Item: 1, State: Finished}, false, t0)
	if rec.Done || rec.JobName != "j" || len(rec.Shards) != 2 || !rec.Shards[0].EndedAt.Equal(t0) {
		t.Fatalf("%+v", rec)
	}
	rec = RecordShard(rec, "j", ShardOutcome{Item: 0, State: Finished}, true, t0.Add(time.Second))
	if !rec.Done || !rec.Success || len(rec.Shards) != 2 || !rec.EndedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("the last attempts finished: %+v", rec)
	}
}

// A retry of a backfill run's shard keeps the failed task's nominal
// instant (a workflow node's key does not name it).
func TestRetryKeepsTheScheduledInstant(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 10, 0, 0, time.UTC)
	e := entry(Running, 0)
	e.ScheduledAt = at
	o := Transition(Input{Update: Update{State: Failed, Source: SourceExecutor}, Entry: e, Job: Job{Exists: true, Runnable: true, MaxRetries: 1}, Now: t0})
	if o.End == nil || o.End.Retry == nil || !o.End.Retry.ScheduledAt.Equal(at) {
		t.Fatalf("retry %+v", o.End)
	}
}

// A task's end carries what it writes besides the entry: its keyed run's
// record with the shard's end, and its job's run state with the pause it
// decided (the handler commits these as they are).
func TestTransitionAccountsTheEnd(t *testing.T) {
	rep := Report{StartedAt: t0.Add(-time.Minute), EndedAt: t0.Add(-time.Second), Outputs: map[string]string{"k": "v"}}
	job := Job{Name: "j", Exists: true, Runnable: true, PauseAfterFailures: 2}
	o := Transition(Input{Update: Update{TaskID: "t1", State: Failed, Source: SourceExecutor, Message: "boom"}, Entry: entry(Running, 0),
		Job: job, Item: 3, Report: rep, Runs: RunState{Consecutive: 1}, Now: t0})
	e := o.End
	if e == nil || e.Record == nil || e.Runs == nil || e.Pause == nil {
		t.Fatalf("end %+v", e)
	}
	sh := e.Record.Shards
	if e.Record.JobName != "j" || !e.Record.Done || e.Record.Success || !e.Record.Failed || len(sh) != 1 ||
		sh[0].Item != 3 || sh[0].Message != "boom" || !sh[0].EndedAt.Equal(rep.EndedAt) || sh[0].Outputs["k"] != "v" {
		t.Fatalf("record %+v", e.Record)
	}
	if e.Pause.FailedRuns != 2 || e.Pause.Cause != "boom" {
		t.Fatalf("pause %+v, runs %+v", e.Pause, e.Runs)
	}

	// A task without a run key writes no record; a healthy run changes no run state.
	en := entry(Running, 0)
	en.RunKey = ""
	o = Transition(Input{Update: Update{TaskID: "t1", State: Finished}, Entry: en, Job: job, Now: t0})
	if o.End.Record != nil || o.End.Runs != nil || o.End.Pause != nil {
		t.Fatalf("end %+v", o.End)
	}

	// A deregistered job's runs are not counted; a failure without a message is caused by its state.
	o = Transition(Input{Update: Update{TaskID: "t1", State: Lost}, Entry: entry(Running, 0), Job: Job{Name: "j"}, Now: t0})
	if o.End.Runs != nil || o.End.Record == nil || o.End.Record.Shards[0].State != Lost {
		t.Fatalf("end %+v", o.End)
	}
	o = Transition(Input{Update: Update{TaskID: "t1", State: Lost}, Entry: en, Job: job, Runs: RunState{Consecutive: 1}, Now: t0})
	if o.End.Pause == nil || o.End.Pause.Cause != string(Lost) {
		t.Fatalf("end %+v", o.End)
	}
}
