package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/round"
)

// TestRebuildWorksSchedulesOutWithoutTheLock: a term's start works out
// every job's next fire (100,000 jobs: 0.7 s at a takeover) without the
// producer's lock, so the launcher's first round, which asks NextFireAt,
// does not wait for it (its launches would come long after its
// decision). While it runs the soonest fire is unknown (any moment); a
// job changed and rescheduled meanwhile keeps that schedule.
func TestRebuildWorksSchedulesOutWithoutTheLock(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/5 * * * * ?" })
	b := r.addJob(func(j *jobs.Config) { j.JobName = "b"; j.Cron = "0 0 * * * ?" })
	p := r.sched.producer
	swapped := false
	p.beforeSwap = func() {
		swapped = true
		if !p.mu.TryLock() {
			t.Error("the producer's lock is held while the schedules are worked out")
			return
		}
		p.mu.Unlock()
		if at, ok := p.NextFireAt(); !ok || at.After(r.clk.Now().Add(time.Millisecond)) {
			t.Errorf("NextFireAt during the rebuild = %v, %v; want any moment", at, ok)
		}
		b.Cron = "0/3 * * * * ?"
		if err := r.reg.Config().UpdateJob(r.ctx, b); err != nil {
			t.Error(err)
			return
		}
		r.reload()
		p.Reschedule("b")
	}
	p.rescheduleAll(t0)
	if !swapped {
		t.Fatal("the rebuild's hook did not run")
	}
	fires := p.NextFires(t0.Add(2*time.Hour), func(string) bool { return true })
	want := []round.Fire{{Job: "b", At: t0.Add(3 * time.Second)}, {Job: "a", At: t0.Add(5 * time.Second)}}
	if len(fires) != len(want) || fires[0] != want[0] || fires[1] != want[1] {
		t.Fatalf("next fires %v, want %v (b's change during the rebuild stands)", fires, want)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("NextFireAt after the rebuild = %v, %v; want b's", at, ok)
	}
}

// TestNextFiresWaitsForTheRebuild: capacities reserve room for the next
// fires, so NextFires waits for a rebuild under way instead of reading
// the schedule it replaces (here: none yet).
func TestNextFiresWaitsForTheRebuild(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/5 * * * * ?" })
	p := r.sched.producer
	got := make(chan []round.Fire, 1)
	waiting := make(chan struct{})
	p.awaitRebuild = func() { close(waiting) }
	p.beforeSwap = func() {
		go func() { got <- p.NextFires(t0.Add(time.Hour), func(string) bool { return true }) }()
		select {
		case <-waiting:
		case f := <-got:
			t.Errorf("NextFires answered %v during the rebuild", f)
			got <- f
		case <-time.After(10 * time.Second): // failure bound only
			t.Error("NextFires neither waited nor answered")
		}
	}
	p.rescheduleAll(t0)
	if f := <-got; len(f) != 1 || f[0].Job != "a" || !f[0].At.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("NextFires after the rebuild = %v, want a at +5 s", f)
	}
}

// TestLoadGarbageIsFreedAfterTheFirstLaunch: the full collection that
// returns a term's load garbage runs once its first launch has committed,
// not beside the takeover's first round.
func TestLoadGarbageIsFreedAfterTheFirstLaunch(t *testing.T) {
	r := newRig(t)
	freed := make(chan struct{}, 4)
	r.sched.freeOSMemory = func() { freed <- struct{}{} }
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	r.sched.freeAfterLoad(ctx)()
	(<-r.sched.events)(ctx) // the loop's part: the first launch has not committed
	select {
	case <-freed:
		t.Fatal("freed before the term's first launch")
	default:
	}
	if r.sched.launcher.start.afterFirst == nil {
		t.Fatal("nothing waits for the first launch")
	}
	r.sched.launcher.start.afterFirst()
	<-freed
}
