package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// Every launched shard says who or what queued its run (issue 42): the
// API's user, a cron fire, a retry of a failed shard; history and the
// console take it from the running entry and the task events.
func TestLaunchesSayWhoTriggeredThem(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(c *jobs.Config) { c.ShardingTotalCount, c.MaxRetries = 2, 1 })
	if _, err := r.reg.Work().TriggerBy(r.ctx, "job", false, r.clk.Now(), "api:alice"); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) != 2 || run[0].Trigger != "api:alice" || run[1].Trigger != "api:alice" {
		t.Fatalf("launched by the API: %+v", run)
	}
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.statusMsg(run[0].TaskID, "TASK_FAILED", "exit code 1")
	r.clk.Advance(time.Minute) // past any backoff
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if again := r.running("job")[0]; again.TaskID == run[0].TaskID || again.Trigger != ByRetry {
		t.Fatalf("the retried shard: %+v", again)
	}
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_FINISHED")
	}

	// A cron fire.
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{"job": false}, r.clk.Now(), time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	r.offer("o3", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if run := r.running("job"); len(run) != 2 || run[0].Trigger != "cron" {
		t.Fatalf("launched by a cron fire: %+v", run)
	}
}
