package scheduler

import (
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

type launchRecorder struct {
	nopTasks
	launched []observe.TaskEvent
}

func (o *launchRecorder) Launched(t observe.TaskEvent) { o.launched = append(o.launched, t) }

// TestLateLaunchSaysWhy: work launched more than LateAfter after it was
// due carries how late and its last recorded wait in its launch event
// (the status trace's message in the job's history); work launched on
// time carries none.
func TestLateLaunchSaysWhy(t *testing.T) {
	r := newRig(t)
	obs := &launchRecorder{}
	r.rebuild(func(d *Deps) { d.Tasks = obs })
	r.addApp("app", 0.5, 64)
	r.addJob(func(j *jobs.Config) { j.JobName = "big"; j.ShardingTotalCount = 1; j.CPUCount = 2 })
	r.addJob(func(j *jobs.Config) { j.JobName = "small"; j.ShardingTotalCount = 1; j.CPUCount = 0.1 })
	r.trigger("small")
	r.offer("o1", 1, 1024)
	r.sched.launcher.round(r.ctx)
	if len(obs.launched) != 1 || obs.launched[0].Late != "" {
		t.Fatalf("an on-time launch: %+v", obs.launched)
	}
	r.trigger("big")
	r.offer("o2", 1, 1024)
	r.round() // waits for resources; recorded a moment later
	r.clk.Advance(LateAfter)
	r.offer("o3", 4, 4096)
	r.sched.launcher.round(r.ctx)
	if len(obs.launched) != 2 {
		t.Fatalf("launches: %+v", obs.launched)
	}
	late := obs.launched[1].Late
	for _, want := range []string{"launched 2s after it was due", "waited: ", "CPU"} {
		if !strings.Contains(late, want) {
			t.Errorf("the late launch's words lack %q: %s", want, late)
		}
	}
}
