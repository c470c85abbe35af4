package scheduler

import (
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// TestEndOfADeregisteredJobsTask: the kill that follows a job's
// deregistration ends its task (the update was refused for ever: the
// run state of a job with no name was read).
func TestEndOfADeregisteredJobsTask(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.status(run[0].TaskID, "TASK_RUNNING")
	if err := r.reg.DeleteJob(r.ctx, "job"); err != nil {
		t.Fatal(err)
	}
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "job"})
	if len(r.drv.kills) != 1 {
		t.Fatalf("kills %v", r.drv.kills)
	}
	r.status(run[0].TaskID, "TASK_KILLED")
	if n := len(r.running("job")); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}
