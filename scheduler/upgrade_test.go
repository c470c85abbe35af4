package scheduler

import (
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// The original's running entries (bare task ids): a live DAEMON task is
// killed once and its job queued again once; a TRANSIENT one is adopted
// (not killed) and its end recorded; this scheduler's own DAEMON tasks are
// never killed so.
func TestOriginalDaemonReplacedOnceTransientAdopted(t *testing.T) {
	for _, c := range []struct {
		name     string
		execType jobs.ExecutionType
		kills    int
	}{
		{"daemon", jobs.Daemon, 1},
		{"transient", jobs.Transient, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.addApp("app", 1, 128)
			r.addJob(func(j *jobs.Config) { j.JobExecutionType, j.ShardingTotalCount, j.Cron = c.execType, 1, "* * * * * ?" })
			id := "job@-@0@-@READY@-@agent-1@-@5b1f7c0e-3a5d-4f0a-9d51-0c8e2b7a6d44"
			if err := r.kv.Commit(r.ctx, store.Put(registry.RunningPath+"/job/job@-@0", []byte(id))); err != nil {
				t.Fatal(err)
			}
			r.sched.st.reloadRunning()
			if e := r.running("job")[0]; e.TaskID != id || !registry.LeftByOriginal(e) {
				t.Fatalf("the original's entry read as %+v", e)
			}
			r.status(id, "TASK_RUNNING")
			r.status(id, "TASK_RUNNING") // a second answer (a periodic reconciliation)
			if len(r.drv.kills) != c.kills {
				t.Fatalf("kills %v, want %d", r.drv.kills, c.kills)
			}
			end := "TASK_FINISHED"
			if c.execType == jobs.Daemon {
				end = "TASK_KILLED"
			}
			r.status(id, end)
			if n := len(r.running("job")); n != 0 {
				t.Fatalf("%d tasks still running after the end", n)
			}
			if want := c.kills; r.readyCount("job") != want {
				t.Fatalf("ready %d after the end, want %d", r.readyCount("job"), want)
			}
		})
	}
	// A DAEMON task of this scheduler's own is left alone.
	r, run := launched(t, func(j *jobs.Config) { j.JobExecutionType, j.Cron = jobs.Daemon, "* * * * * ?" })
	r.status(run[0].TaskID, "TASK_RUNNING")
	if len(r.drv.kills) != 0 {
		t.Fatalf("this scheduler's own DAEMON task was killed: %v", r.drv.kills)
	}
}
