package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// TestAnInstantTakenAheadIsNotFiredAgain: a fire staged ahead of its
// instant (fire_lead) has landed, or is still being committed, when the
// job is scheduled again from a time before that instant by something
// that changes nothing the fire was computed from: a resync of the
// configuration (RescheduleAll: the watch may have missed changes), or a
// reschedule that records no instant (an app's change, a change whose
// instant could not be read). The instant was this producer's to fire
// and it did: scheduled again, it fires a second time, and once the
// first execution has launched (at its instant) the second is a run of
// its own serving the same instant.
func TestAnInstantTakenAheadIsNotFiredAgain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight bool // the reschedule comes while the fire's commit is in flight
		again    func(r *rig, p *Producer)
	}{
		{"a resync after the fire landed", false, func(_ *rig, p *Producer) { p.RescheduleAll() }},
		{"a resync during the fire's commit", true, func(_ *rig, p *Producer) { p.RescheduleAll() }},
		{"an app change after the fire landed", false, func(r *rig, _ *Producer) {
			r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigApp, Name: "app"})
		}},
		{"an app change during the fire's commit", true, func(r *rig, _ *Producer) {
			r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigApp, Name: "app"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.addApp("app", 1, 128)
			r.addJob(func(j *jobs.Config) { j.JobName = "s"; j.Cron = "0/2 * * * * ?"; j.ShardingTotalCount = 1 })
			p := startProducer(r)
			p.Lead = time.Second
			instant := t0.Add(2 * time.Second)

			r.clk.Set(instant.Add(-800 * time.Millisecond)) // within the lead: the fire of 2 s is staged
			if tc.inFlight {
				p.Dispatch = &applyDuring{registryDispatcher: registryDispatcher{r: r.reg}, apply: func() { tc.again(r, p) }}
			}
			p.fireDue(r.ctx)
			if n := r.readyCount("s"); n != 1 {
				t.Fatalf("%d executions staged, want the fire of 2 s", n)
			}
			if !tc.inFlight {
				r.clk.Set(instant.Add(-500 * time.Millisecond))
				tc.again(r, p)
			}
			r.clk.Set(instant) // the staged execution launches at its instant
			r.offer("o1", 8, 4096)
			r.sched.launcher.round(r.ctx)
			if len(r.drv.accepts) != 1 || r.readyCount("s") != 0 {
				t.Fatalf("launched %d, %d pending: want the staged fire launched at its instant", len(r.drv.accepts), r.readyCount("s"))
			}
			r.clk.Set(instant.Add(100 * time.Millisecond))
			fireAllDue(r, p)
			if n := r.readyCount("s"); n != 0 {
				t.Errorf("%d executions queued after the fire of 2 s launched, want 0: the instant fired twice", n)
			}
			if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(4*time.Second)) {
				t.Errorf("next fire at %v, want t0+4s", at)
			}
		})
	}
}
