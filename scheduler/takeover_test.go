package scheduler

import (
	"context"
	"testing"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// TestTakeoverAfterALaunchTheMasterNeverSaw: a leader committed a 2-shard launch and died
// before its ACCEPT reached the master. The next leader (a new process on the same
// registry) reconciles, the master answers TASK_GONE for both, and the first offers then
// launch the two shards again and another job's waiting execution: nothing stays behind.
// (Two failover shards of one job in one round were each launched twice, so every launch
// commit of the round conflicted and nothing launched again: e2e/ha caught it once.)
func TestTakeoverAfterALaunchTheMasterNeverSaw(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.Failover = "ex", 2, 0.1, true })
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "gap", 1, 0.1 })
	r.trigger("ex")
	dying, die := context.WithCancel(r.ctx)
	r.drv.acceptErr, r.drv.acceptHook = context.Canceled, die
	r.offer("o1", 4, 8192)
	r.sched.launcher.round(dying) // committed as STAGING; the ACCEPT is lost with its leader
	ctx := r.ctx
	if run := r.running("ex"); len(run) != 2 {
		t.Fatalf("running = %+v, want the 2 shards committed", run)
	}
	// The next leader: a scheduler anew on the same registry, subscribed.
	r.rebuild(func(*Deps) {})
	r.drv.acceptErr, r.drv.acceptHook = nil, nil
	r.sched.st.subscribed = false
	r.sched.recon.subscribed(ctx, "fw-1")
	r.trigger("gap")
	r.trigger("ex") // a fire while the shards are accounted for
	for _, rt := range r.running("ex") {
		if err := r.sched.status.handle(ctx, r.reg, engine.Status{TaskID: rt.TaskID, AgentID: "agent-1", State: "TASK_GONE",
			Reason: task.ReasonReconciliation, Source: "SOURCE_MASTER", Message: "Reconciliation: Task is unknown"}); err != nil {
			t.Fatal(err)
		}
	}
	r.offer("o2", 4, 8192)
	r.sched.launcher.round(ctx)
	launched := map[string]int{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			tid, err := jobs.ParseTaskID(l.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			launched[tid.JobName]++
		}
	}
	if launched["ex"] != 2 || launched["gap"] != 1 {
		t.Fatalf("launched %v after the takeover, want ex's 2 shards and gap's; waiting: %+v", launched, r.waiting())
	}
}
