package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// TestLaunchWaitsForReconciliation: after (re)subscribing, nothing is
// launched until Mesos has answered for every task the registry holds as
// running — or the wait has passed.
func TestLaunchWaitsForReconciliation(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "old"; j.ShardingTotalCount = 2 })
	r.addJob(func(j *jobs.Config) { j.JobName = "new" })
	r.trigger("old")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx) // a previous leader launched "old"
	running := r.running("old")
	if len(running) != 2 {
		t.Fatalf("running %+v", running)
	}
	r.drv.accepts = nil

	r.sched.recon.begin(r.ctx) // the new subscription
	if n := len(r.drv.reconciles); n != 1 || len(r.drv.reconciles[0]) != 2 {
		t.Fatalf("explicit reconcile of the running tasks: %+v", r.drv.reconciles)
	}
	r.trigger("new")
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("launched before the running tasks were reconciled")
	}
	r.status(running[0].TaskID, "TASK_RUNNING")
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("launched with one task still unreconciled")
	}
	r.status(running[1].TaskID, "TASK_RUNNING")
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.running("old")) != 2 {
		t.Fatalf("after reconciliation: accepts %d, running old %+v", len(r.drv.accepts), r.running("old"))
	}
}

func TestReconciliationWaitIsBounded(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "old"; j.ShardingTotalCount = 1 })
	r.addJob(func(j *jobs.Config) { j.JobName = "new" })
	r.trigger("old")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	r.drv.accepts = nil
	r.sched.recon.begin(r.ctx)
	r.trigger("new")
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("launched before the wait")
	}
	r.clk.Advance(r.sched.deps.Options.ReconcileWait + time.Millisecond)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatal("still waiting after the bound")
	}
	if len(r.running("old")) != 1 {
		t.Fatal("the unanswered task was dropped")
	}
}

// TestPeriodicReconcileKeepsItsInterval: the loop's chores tick at least
// once a minute, but the explicit reconciliation runs once per
// Options.Reconcile, counted from the subscription's own.
func TestPeriodicReconcileKeepsItsInterval(t *testing.T) {
	r, _ := launched(t, nil)
	r.sched.deps.Options.Reconcile = 10 * time.Minute
	r.sched.recon.begin(r.ctx)
	r.drv.reconciles = nil
	for minute := 1; minute <= 25; minute++ {
		r.clk.Advance(time.Minute)
		r.sched.recon.periodic(r.ctx)
	}
	if n := len(r.drv.reconciles); n != 2 {
		t.Fatalf("25 minutes at a 10 minute interval: %d reconciliations, want 2", n)
	}
}
