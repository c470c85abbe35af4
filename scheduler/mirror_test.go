package scheduler

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// TestRunningMirrorMatchesTheStore drives random launches, status updates
// and configuration changes and checks after every step that the loop's
// running mirror equals what the store holds.
func TestRunningMirrorMatchesTheStore(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	names := []string{"a", "b", "c"}
	for _, n := range names {
		r.addJob(func(j *jobs.Config) { j.JobName = n; j.Failover = n != "c"; j.ShardingTotalCount = 2; j.CPUCount = 0.1 })
	}
	states := []string{"TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED", "TASK_FAILED", "TASK_LOST", "TASK_KILLED", "TASK_UNREACHABLE"}
	rng := rand.New(rand.NewPCG(7, 11))
	for step := range 400 {
		switch rng.IntN(5) {
		case 0:
			r.trigger(names[rng.IntN(len(names))])
		case 1:
			r.offer("o", 4, 4096)
			r.sched.launcher.round(r.ctx)
		case 2, 3:
			all, err := r.reg.Work().RunningTasks(r.ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string // in a deterministic order: map iteration is not
			for _, items := range all {
				for _, rt := range items {
					ids = append(ids, rt.TaskID)
				}
			}
			if len(ids) > 0 {
				slices.Sort(ids)
				r.status(ids[rng.IntN(len(ids))], states[rng.IntN(len(states))])
			}
		case 4:
			r.clk.Advance(time.Duration(rng.IntN(3)) * time.Minute)
			r.sched.recon.periodic(r.ctx)
		}
		want, err := r.reg.Work().RunningTasks(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.sched.st.runningAll(r.ctx, r.reg)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: mirror\n%+v\nstore\n%+v", step, got, want)
		}
	}
	if len(r.drv.accepts) < 15 {
		t.Fatalf("the walk exercised too little: %d accepts", len(r.drv.accepts))
	}
}

func TestOffersAreHeldBrieflyAfterWork(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.OfferHold = time.Second
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	r.offer("o2", 7, 4000)        // the accepted offer's remainder, re-offered at once
	r.sched.launcher.round(r.ctx) // nothing waits, but within the hold
	if len(r.drv.declines) != 0 || r.drv.suppress != 0 {
		t.Fatalf("declined %+v / suppressed %d within the hold", r.drv.declines, r.drv.suppress)
	}
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_FINISHED")
	}
	r.trigger("job")
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 2 || r.drv.revive != 0 {
		t.Fatalf("accepts=%d revive=%d: the held offer should launch the next execution", len(r.drv.accepts), r.drv.revive)
	}
	r.offer("o3", 6, 3000) // o2 was used; hold a new one and let the hold expire
	r.clk.Advance(time.Second)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.declines) != 1 || r.drv.suppress != 1 {
		t.Fatalf("after the hold: declines %+v suppress %d", r.drv.declines, r.drv.suppress)
	}
}
