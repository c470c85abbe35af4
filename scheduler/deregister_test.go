package scheduler

import (
	"testing"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
)

// TestEndOfADeregisteredJobsTask: the kill that follows a job's
// deregistration ends its task (the update was refused for ever: the
// run state of a job with no name was read).
func TestEndOfADeregisteredJobsTask(t *testing.T) {
	r, run := launched(t, func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.status(run[0].TaskID, "TASK_RUNNING")
	if err := r.reg.Config().DeleteJob(r.ctx, "job"); err != nil {
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

type statusRecorder struct {
	nopTasks
	events []observe.TaskEvent
	states []engine.Status
}

func (s *statusRecorder) StatusChanged(ev observe.TaskEvent, st engine.Status) {
	s.events, s.states = append(s.events, ev), append(s.states, st)
}

// Deleting a DAEMON job kills its resident tasks: their end says "killed
// (job deleted)" and is no transient execution (history wrote each as a
// failed run, issue 57 item 10); a deleted transient job's killed tasks
// say so too.
func TestDeletedJobsTasksEndKilledByTheDeletion(t *testing.T) {
	for _, daemon := range []bool{true, false} {
		r, run := launched(t, func(j *jobs.Config) {
			j.ShardingTotalCount = 2
			if daemon {
				j.JobExecutionType, j.Cron = jobs.Daemon, "0/5 * * * * ?"
			}
		})
		obs := &statusRecorder{}
		r.sched.status.obs = obs
		for _, e := range run {
			r.status(e.TaskID, "TASK_RUNNING")
		}
		if err := r.reg.Config().DeleteJob(r.ctx, "job"); err != nil {
			t.Fatal(err)
		}
		r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "job"})
		for _, e := range run {
			r.status(e.TaskID, "TASK_KILLED")
		}
		if n := len(r.running("job")); n != 0 {
			t.Fatalf("daemon %v: %d entries left", daemon, n)
		}
		ends := 0
		for i, st := range obs.states {
			if st.State != "TASK_KILLED" {
				continue
			}
			ends++
			if st.Message != "killed (job deleted)" || obs.events[i].Transient == daemon {
				t.Errorf("daemon %v: the end of %s: message %q, transient %v", daemon, st.TaskID, st.Message, obs.events[i].Transient)
			}
		}
		if ends != 2 {
			t.Errorf("daemon %v: %d ends seen", daemon, ends)
		}
	}
}
