package scheduler

import (
	"context"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
)

// TestConfigurationChangesApplyOnTheLoop: following the store does not
// change the catalog; the loop applies each change (configEvent) together
// with what it means for running tasks. A launch round in between used to
// launch on the new configuration and then kill what it had just launched
// as the old one's: a job registered and triggered at once lost its run.
func TestConfigurationChangesApplyOnTheLoop(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	cfg, dis, got := make(chan store.Event), make(chan store.Event), make(chan store.Event)
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go r.sched.catalog.Follow(ctx, cfg, dis, func(ev store.Event) { got <- ev })

	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "late", "app", 0.1, 16, 2
	if err := r.reg.AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	r.trigger("late")
	cfg <- store.Event{Type: store.EventPut, Path: "/config/job/late"}
	ev := <-got
	if _, ok := r.sched.catalog.Job("late"); ok {
		t.Fatal("following the store changed the catalog before the loop handled the change")
	}
	r.offer("o1", 4, 4096)
	r.sched.launch(ctx) // a round before the loop handled the registration: the job waits
	if n := len(r.running("late")); n != 0 {
		t.Fatalf("%d shards launched before the loop handled the registration", n)
	}

	r.sched.configEvent(ctx, ev)
	if _, ok := r.sched.catalog.Job("late"); !ok {
		t.Fatal("the catalog lacks the job after the loop handled its registration")
	}
	r.offer("o2", 4, 4096)
	r.sched.launch(ctx)
	if n := len(r.running("late")); n != 2 {
		t.Fatalf("%d shards running after the registration was handled, want 2", n)
	}
	if len(r.drv.kills) != 0 || len(r.drv.shutdowns) != 0 {
		t.Fatalf("kills %v, shutdowns %v for the job's first run", r.drv.kills, r.drv.shutdowns)
	}
}
