package scheduler

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// stateNotifier keeps the states the scheduler notified.
type stateNotifier struct {
	mu   sync.Mutex
	sent []engine.Status
}

func (n *stateNotifier) Notify(_ jobs.Config, _ observe.TaskEvent, st engine.Status) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, st)
}

func (n *stateNotifier) states() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, st := range n.sent {
		out = append(out, string(st.State))
	}
	return out
}

// runOnce triggers the job, launches every shard and ends shard i with
// ends[i] (a Mesos state; a missing item finishes).
func runOnce(r *rig, ends map[int]string) {
	r.t.Helper()
	r.trigger("job")
	r.offer("o", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) == 0 {
		r.t.Fatal("nothing launched")
	}
	for item, rt := range run {
		state := "TASK_FINISHED"
		if s, ok := ends[item]; ok {
			state = s
		}
		r.status(rt.TaskID, "TASK_RUNNING") // started: a failure is not a never-started retry
		r.statusMsg(rt.TaskID, state, "exit code 3: boom")
	}
}

func (r *rig) statusMsg(taskID, state, msg string) {
	r.t.Helper()
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: "agent-1", State: task.State(state), Message: msg}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) runState() task.RunState {
	r.t.Helper()
	rs, err := r.reg.Work().RunStateOf(r.ctx, "job")
	if err != nil {
		r.t.Fatal(err)
	}
	return rs
}

func (r *rig) pause() (task.Pause, bool) {
	r.t.Helper()
	p, ok, err := r.reg.Work().PauseOf(r.ctx, "job")
	if err != nil {
		r.t.Fatal(err)
	}
	return p, ok
}

func pauseRig(t *testing.T, mod func(*jobs.Config)) (*rig, *stateNotifier) {
	r := newRig(t)
	n := &stateNotifier{}
	r.sched.status.notifier = n
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.ShardingTotalCount, j.PauseAfterFailures = 2, 2
		j.Props = map[string]string{"webhook.url": "http://hook.invalid/x"}
		if mod != nil {
			mod(j)
		}
	})
	return r, n
}

func TestPauseAfterFailedRunsInARow(t *testing.T) {
	r, n := pauseRig(t, nil)
	runOnce(r, map[int]string{0: "TASK_FAILED"})
	if rs := r.runState(); rs.Consecutive != 1 || rs.LastCause != "exit code 3: boom" {
		t.Fatalf("after one failed run: %+v", rs)
	}
	runOnce(r, nil) // a success resets the count
	if rs := r.runState(); rs.Consecutive != 0 {
		t.Fatalf("after a success: %+v", rs)
	}
	runOnce(r, map[int]string{1: "TASK_LOST"})
	if _, paused := r.pause(); paused {
		t.Fatal("paused after one failed run")
	}
	// A new leader (a new scheduler on the same registry) continues the count.
	r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Notifier: n,
		Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.reload()
	r.clk.Advance(time.Minute)
	runOnce(r, map[int]string{0: "TASK_FAILED", 1: "TASK_FAILED"})
	p, paused := r.pause()
	if !paused || p.FailedRuns != 2 || p.Cause != "exit code 3: boom" || !p.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("pause = %+v, %v; want 2 failed runs at %v", p, paused, t0.Add(time.Minute))
	}
	if !strings.Contains(p.Reason, "paused after 2 failed runs in a row at 2026-11-22T10:01:00Z") {
		t.Errorf("reason %q", p.Reason)
	}
	if d, _ := r.reg.Config().IsDisabled(r.ctx, "job", "job"); !d {
		t.Error("the job is not disabled")
	}
	if got := n.states(); len(got) != 1 || got[0] != "JOB_PAUSED" {
		t.Errorf("notified %v, want one JOB_PAUSED", got)
	}
	if rs := r.runState(); rs.Consecutive != 0 {
		t.Errorf("count after the pause = %d, want 0 (a fresh start after enable)", rs.Consecutive)
	}
}

func TestRetriesWithinARunAreNotFailedRuns(t *testing.T) {
	r, _ := pauseRig(t, func(j *jobs.Config) { j.MaxRetries, j.PauseAfterFailures = 1, 1 })
	runOnce(r, map[int]string{0: "TASK_FAILED"}) // shard 0 waits for its retry
	if rs := r.runState(); rs.Consecutive != 0 || rs.Failed {
		t.Fatalf("run state while a retry waits: %+v", rs)
	}
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	retry := r.running("job")[0]
	if retry.Attempts != 1 {
		t.Fatalf("retry not launched: %+v", r.running("job"))
	}
	r.status(retry.TaskID, "TASK_RUNNING")
	r.status(retry.TaskID, "TASK_FINISHED")
	if _, paused := r.pause(); paused {
		t.Fatal("a run whose retry succeeded paused the job")
	}
	if rs := r.runState(); rs.Consecutive != 0 || rs.Failed || rs.Succeeded {
		t.Fatalf("after the run: %+v", rs)
	}
	// Shard 0 fails twice (its retry too): the run failed, limit 1.
	runOnce(r, map[int]string{0: "TASK_FAILED"})
	r.offer("o3", 8, 4096)
	r.sched.launcher.round(r.ctx)
	r.status(r.running("job")[0].TaskID, "TASK_RUNNING")
	r.statusMsg(r.running("job")[0].TaskID, "TASK_FAILED", "exit code 4: again")
	p, paused := r.pause()
	if !paused || p.FailedRuns != 1 || p.Cause != "exit code 4: again" || !strings.HasPrefix(p.Reason, "paused after 1 failed run in a row") {
		t.Fatalf("pause = %+v %v", p, paused)
	}
}

func TestKilledRunsCountNeitherWay(t *testing.T) {
	r, _ := pauseRig(t, func(j *jobs.Config) { j.PauseAfterFailures = 1 })
	runOnce(r, map[int]string{0: "TASK_KILLED", 1: "TASK_KILLED"})
	if _, paused := r.pause(); paused {
		t.Fatal("killed shards paused the job")
	}
	if rs := r.runState(); rs != (task.RunState{}) {
		t.Fatalf("run state after a killed run: %+v", rs)
	}
}

func TestKeyedTriggerRecordsItsRun(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.Failover = 2, true })
	if _, err := r.reg.Work().TriggerRun(r.ctx, "job", queue.PendingRun{IdempotencyKey: "ci-42"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.offer("o", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if run[0].RunKey != "ci-42" || run[1].RunKey != "ci-42" {
		t.Fatalf("running entries lack the key: %+v", run)
	}
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.statusMsg(run[0].TaskID, "TASK_FAILED", "exit code 3: boom")
	rec, err := r.reg.Work().RunRecordOf(r.ctx, "ci-42")
	if err != nil || rec.Done || len(rec.Shards) != 1 || rec.JobName != "job" || !rec.Failed {
		t.Fatalf("record after one shard failed for good (the run cannot succeed) = %+v %v", rec, err)
	}
	if fo, _ := r.reg.Work().FailoverQueue(r.ctx); len(fo) != 1 || fo[0].RunKey != "ci-42" || fo[0].Retry {
		t.Fatalf("failover entry = %+v", fo)
	}
	r.status(run[1].TaskID, "TASK_FINISHED")
	rec, _ = r.reg.Work().RunRecordOf(r.ctx, "ci-42")
	if rec.Done || len(rec.Shards) != 2 || rec.Shards[0].Message != "exit code 3: boom" {
		t.Fatalf("record while shard 0 waits for its failover = %+v", rec)
	}
	// The failed-over shard runs again with the run's key and finishes:
	// the record reads as the shards ended (it used to stay FAILED).
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	again := r.running("job")[0]
	if again.RunKey != "ci-42" {
		t.Fatalf("the failover lost the run's key: %+v", again)
	}
	r.status(again.TaskID, "TASK_RUNNING")
	r.status(again.TaskID, "TASK_FINISHED")
	rec, _ = r.reg.Work().RunRecordOf(r.ctx, "ci-42")
	if !rec.Done || !rec.Success || len(rec.Shards) != 2 || rec.Shards[0].State != "TASK_FINISHED" {
		t.Fatalf("record at the end = %+v", rec)
	}
}

// TestFailedRunsAreCountedWithoutPause: consecutiveFailedRuns counts
// failed runs whether or not pauseAfterFailures is set (it stayed 0).
func TestFailedRunsAreCountedWithoutPause(t *testing.T) {
	r, _ := pauseRig(t, func(j *jobs.Config) { j.PauseAfterFailures = 0 })
	runOnce(r, map[int]string{0: "TASK_FAILED"})
	runOnce(r, map[int]string{1: "TASK_FAILED"})
	if rs := r.runState(); rs.Consecutive != 2 || rs.LastCause != "exit code 3: boom" {
		t.Fatalf("after two failed runs: %+v", rs)
	}
	if _, paused := r.pause(); paused {
		t.Fatal("paused without pauseAfterFailures")
	}
	runOnce(r, nil)
	if rs := r.runState(); rs.Consecutive != 0 {
		t.Fatalf("after a success: %+v", rs)
	}
}

func TestDaemonRunsCountOneByOne(t *testing.T) {
	r, n := pauseRig(t, func(j *jobs.Config) {
		j.JobExecutionType, j.Cron, j.ShardingTotalCount, j.PauseAfterFailures = jobs.Daemon, "0/5 * * * * ?", 1, 2
	})
	r.trigger("job")
	r.offer("o", 8, 4096)
	r.sched.launcher.round(r.ctx)
	task := r.running("job")[0].TaskID
	report := func(ok bool) {
		r.sched.status.daemonReport(r.ctx, r.reg, "agent-1", "", jobs.DaemonReport{Type: jobs.DaemonComplete, TaskID: task, Success: ok, Message: "exit code 1"})
	}
	report(false)
	report(true)
	report(false)
	if _, paused := r.pause(); paused {
		t.Fatal("paused although a success came between the failures")
	}
	report(false)
	if p, paused := r.pause(); !paused || p.FailedRuns != 2 {
		t.Fatalf("pause = %+v %v", p, paused)
	}
	if got := n.states(); len(got) != 1 || got[0] != "JOB_PAUSED" {
		t.Errorf("notified %v", got)
	}
}
