package scheduler

import (
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// TestConfigurationChangesApplyOnTheLoop: following the store does not
// change the catalog; the loop applies each change (configFollower.apply) together
// with what it means for running tasks. A launch round in between used to
// launch on the new configuration and then kill what it had just launched
// as the old one's: a job registered and triggered at once lost its run.
func TestConfigurationChangesApplyOnTheLoop(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	ctx := r.ctx

	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "late", "app", 0.1, 16, 2
	if err := r.reg.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	r.trigger("late")
	ev := registry.ConfigChange{Kind: registry.ConfigJob, Name: "late"}
	if _, ok := r.sched.catalog.Job("late"); ok {
		t.Fatal("following the store changed the catalog before the loop handled the change")
	}
	r.offer("o1", 4, 4096)
	r.sched.launcher.round(ctx) // a round before the loop handled the registration: the job waits
	if n := len(r.running("late")); n != 0 {
		t.Fatalf("%d shards launched before the loop handled the registration", n)
	}

	r.sched.config.apply(ctx, ev)
	if _, ok := r.sched.catalog.Job("late"); !ok {
		t.Fatal("the catalog lacks the job after the loop handled its registration")
	}
	r.offer("o2", 4, 4096)
	r.sched.launcher.round(ctx)
	if n := len(r.running("late")); n != 2 {
		t.Fatalf("%d shards running after the registration was handled, want 2", n)
	}
	if len(r.drv.kills) != 0 || len(r.drv.shutdowns) != 0 {
		t.Fatalf("kills %v, shutdowns %v for the job's first run", r.drv.kills, r.drv.shutdowns)
	}
}
