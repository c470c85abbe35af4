package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// perTaskDriver is an engine whose every task runs an executor of its own (Kubernetes).
type perTaskDriver struct{ *fakeDriver }

func (perTaskDriver) Capabilities() engine.Capabilities { return engine.Capabilities{} }

// TestExecutorChargedAgainWhenNotShared: an engine that declares its executors per task
// (engine.Capabilities.ExecutorSharing, passed on by Guard) gets the app executor's resources charged
// with every launch, without having to report the executor gone; the Mesos model (the
// fake driver declares nothing) keeps a launched executor charged
// (TestExecutorChargedOncePerAgent).
func TestExecutorChargedAgainWhenNotShared(t *testing.T) {
	r := newRig(t)
	d := Guard(perTaskDriver{r.drv}, func() error { return nil })
	if d.Capabilities().ExecutorSharing || !r.drv.Capabilities().ExecutorSharing {
		t.Fatal("Guard does not pass on the engine's declaration")
	}
	r.sched = New(Deps{Registry: r.reg, Driver: d, Clock: r.clk, Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 1.5, 1024) // task 0.5 + executor 1
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %d, want 1", len(r.drv.accepts))
	}
	if len(r.sched.st.executors) != 0 {
		t.Fatalf("executors kept %v: a per-task executor ends with its task", r.sched.st.executors)
	}
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_FINISHED")
	}
	r.trigger("job")
	r.offer("o2", 0.5, 1024) // the task alone: its executor must be charged again
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %d: the task launched without its executor's resources", len(r.drv.accepts))
	}
	r.offer("o3", 1.5, 1024) // task and executor
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 2 || len(r.drv.accepts[1].launches) != 1 {
		t.Fatalf("accepts = %+v, want the second launch once the executor fits", r.drv.accepts)
	}
}
