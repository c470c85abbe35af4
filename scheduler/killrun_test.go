package scheduler

import (
	"errors"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
)

// Stopping one run (issue 42): its shards are killed and end saying who
// stopped them, its shards waiting to run again are dropped, and the job
// stays enabled with its pending executions.
func TestKillRunStopsOneExecution(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.Failover, j.Misfire = 3, true, true })
	if _, err := r.reg.Work().TriggerRun(r.ctx, "job", queue.PendingRun{IdempotencyKey: "k1"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) != 3 {
		t.Fatalf("launched %d", len(run))
	}
	for _, rt := range run {
		r.status(rt.TaskID, "TASK_RUNNING")
	}
	r.statusMsg(run[2].TaskID, "TASK_FAILED", "exit code 1") // waits for failover
	r.trigger("job")                                         // the next execution, pending
	killed, err := r.sched.killRun(r.ctx, "job", "console:admin")
	if err != nil || len(killed.Tasks) != 2 || killed.Dropped != 1 {
		t.Fatalf("killRun = %+v, %v", killed, err)
	}
	r.drv.mu.Lock()
	kills := len(r.drv.kills)
	r.drv.mu.Unlock()
	if kills != 2 {
		t.Fatalf("driver kills: %d, want 2", kills)
	}
	if fo, _ := r.reg.Work().FailoverOf(r.ctx, "job"); len(fo) != 0 {
		t.Fatalf("failover entries of the stopped run kept: %+v", fo)
	}
	for _, item := range []int{0, 1} {
		if e := r.running("job")[item]; e.KilledBy != "console:admin" {
			t.Fatalf("shard %d not marked: %+v", item, e)
		}
		r.status(run[item].TaskID, "TASK_KILLED")
	}
	if len(r.running("job")) != 0 || r.readyCount("job") != 1 {
		t.Fatalf("after the kill: running %v, pending %d (want the next execution kept)", r.running("job"), r.readyCount("job"))
	}
	if _, why, _ := r.reg.Config().CanRun(r.ctx, "job"); why != jobs.Runnable {
		t.Fatalf("the job no longer runs: %v", why)
	}
	rec, err := r.reg.Work().RunRecordOf(r.ctx, "k1")
	if err != nil || !rec.Done || rec.Success {
		t.Fatalf("the run's record: %+v %v", rec, err)
	}
	for _, sh := range rec.Shards {
		if sh.Item != 2 && sh.Message != "killed by console:admin" {
			t.Errorf("shard %d ended %q, want who killed it", sh.Item, sh.Message)
		}
	}
	if _, err := r.sched.killRun(r.ctx, "job", "console:admin"); !errors.Is(err, ErrNoRun) {
		t.Fatalf("a second kill: %v, want ErrNoRun", err)
	}
	r.addJob(func(j *jobs.Config) { j.JobName, j.JobExecutionType, j.Cron = "resident", jobs.Daemon, "0/5 * * * * ?" })
	if _, err := r.sched.killRun(r.ctx, "resident", "api:admin"); !errors.Is(err, ErrDaemonRunKill) {
		t.Fatalf("a daemon job: %v", err)
	}
	// A team reads its job's name as its namespace knows it, not the
	// scheduler-wide key.
	if _, err := r.sched.killRun(r.ctx, namespace.Key("pay", "nightly"), "api:alice"); !errors.Is(err, ErrNoRun) || strings.Contains(err.Error(), "pay~") ||
		!strings.Contains(err.Error(), "job 'nightly' has no running execution to stop") {
		t.Fatalf("a namespace's job: %v", err)
	}
}

// A stopped run's task the engine still reports running (its kill lost: the engine out of
// reach when it was sent) is killed again at its next update, a reconciliation's answer
// among them; one reported killing is not.
func TestStoppedRunsTaskStillRunningIsKilledAgain(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	id := r.running("job")[0].TaskID
	r.status(id, "TASK_RUNNING")
	if _, err := r.sched.killRun(r.ctx, "job", "console:admin"); err != nil { // its kill lost on the way
		t.Fatal(err)
	}
	r.status(id, "TASK_RUNNING") // the reconciliation's answer
	if kills := r.drv.killed(); len(kills) != 2 || kills[1] != id {
		t.Fatalf("driver kills %v, want %s twice", kills, id)
	}
	r.status(id, "TASK_KILLING")
	if kills := r.drv.killed(); len(kills) != 2 {
		t.Fatalf("killed again though the engine is killing it: %v", kills)
	}
	r.status(id, "TASK_KILLED")
	if len(r.running("job")) != 0 {
		t.Fatalf("running after the kill: %v", r.running("job"))
	}
}
