package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/jobs"
)

// TestFenceProvesLeadershipBeforeAccept: a leader whose lease still holds
// locally but whose successor was elected (the proof read finds its
// election key gone) sends no ACCEPT, rolls the launch back and ends its
// term.
func TestFenceProvesLeadershipBeforeAccept(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	deposed := false
	reads := 0
	term := election.NewLeasedTerm(context.Background(), "/ha/election/n_1", 3, clk, time.Hour, clk.Now(),
		func(context.Context) error {
			reads++
			if deposed {
				return election.ErrNotLeader
			}
			return nil
		})
	r := newRig(t)
	r.rebuild(func(d *Deps) {
		d.Driver = Fence(r.drv, func(ctx context.Context) error { return term.Proven(ctx, 250*time.Millisecond) })
	})
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {})
	r.trigger("job")
	deposed = true
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 || reads != 1 {
		t.Fatalf("deposed leader: %d ACCEPTs, %d reads (want 0, 1)", len(r.drv.accepts), reads)
	}
	if len(r.running("job")) != 0 || r.readyCount("job") != 1 {
		t.Fatalf("launch state not rolled back: running %v ready %d", r.running("job"), r.readyCount("job"))
	}
	if term.Context().Err() == nil {
		t.Fatal("the term did not end")
	}
}

// An ACCEPT the fence refused before sending it leaves its offers with the
// scheduler (the engine still holds them for this framework): once the
// leadership is proven again, the next round launches on them. Before, the
// offers were forgotten unanswered and the leader waited for offers that
// never came (make test, the etcd shape's kill loop).
func TestRefusedAcceptKeepsItsOffers(t *testing.T) {
	refuse := true
	r := newRig(t)
	r.rebuild(func(d *Deps) {
		d.Driver = Fence(r.drv, func(context.Context) error {
			if refuse {
				return election.ErrLeaseLapse
			}
			return nil
		})
	})
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {})
	r.trigger("job")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 || r.readyCount("job") != 1 {
		t.Fatalf("refused round: %d ACCEPTs, ready %d (want 0, 1)", len(r.drv.accepts), r.readyCount("job"))
	}
	if _, ok := r.sched.st.offers["o1"]; !ok {
		t.Fatal("the refused ACCEPT's offer was forgotten")
	}
	refuse = false
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.running("job")) == 0 {
		t.Fatalf("after the proof: %d ACCEPTs, running %v (want one ACCEPT on o1, its shards running)", len(r.drv.accepts), r.running("job"))
	}
}
