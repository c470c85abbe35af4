package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// startProducer readies the rig's producer as Run does once its catch-up
// is done, without its goroutine: the test commits what is due with
// fireDue, at the fake clock's instants.
func startProducer(r *rig) *Producer {
	p := r.sched.producer
	p.mu.Lock()
	p.init()
	p.mu.Unlock()
	p.rescheduleAll(r.clk.Now())
	return p
}

// staleEvents is the scheduler's Events with Stale heard by a test.
type staleEvents struct {
	Events
	stale func(ctx context.Context, job string, config uint64)
}

func (e staleEvents) Stale(ctx context.Context, job string, config uint64) { e.stale(ctx, job, config) }

// fireAllDue commits what is due now, each replayed instant in its own
// commit (a misfire=true job's missed instants: one per wake), as the
// producer's timer would wake at once for each.
func fireAllDue(r *rig, p *Producer) {
	for range 10 {
		p.fireDue(r.ctx)
	}
}

// TestAnEnableAppliedLateFiresFromItsInstant: the leader's loop applied an
// enable 4.2 s after its commit (held as the agents were killed); the
// job's fires from the enable on are due at once by its misfire rule, not
// lost.
func TestAnEnableAppliedLateFiresFromItsInstant(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.Cron = "0/2 * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "m"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	for _, job := range []string{"c", "m"} {
		if err := r.reg.Config().SetDisabled(r.ctx, "job", job, true, t0); err != nil {
			t.Fatal(err)
		}
	}
	r.reload()
	p := startProducer(r)

	r.clk.Set(t0.Add(2700 * time.Millisecond)) // the enables commit
	for _, job := range []string{"c", "m"} {
		if err := r.reg.Config().SetDisabled(r.ctx, "job", job, false, r.clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r.clk.Set(t0.Add(6900 * time.Millisecond)) // the loop applies them
	for _, job := range []string{"c", "m"} {
		r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJobDisabled, Name: job})
	}
	fireAllDue(r, p)
	if n := r.readyCount("c"); n != 1 {
		t.Errorf("misfire=false: %d executions for the instants 4 s and 6 s after the enable's commit, want 1 (collapsed)", n)
	}
	if n := r.readyCount("m"); n != 2 {
		t.Errorf("misfire=true: %d executions for the instants 4 s and 6 s, want 2 (each replayed)", n)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(8*time.Second)) {
		t.Errorf("next fire at %v, want on schedule at t0+8s", at)
	}
}

// TestAChangeAppliedLateFiresNoInstantAgain: an update commits at 1.5 s
// and the loop applies it at 2.5 s: the producer's fire of the instant of
// 2 s, computed from the old configuration, is void (the job's stored
// configuration is another), and once the update is applied the job is
// scheduled from the change: the 2 s instant fires once, on the new
// configuration.
func TestAChangeAppliedLateFiresNoInstantAgain(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := r.addJob(func(j *jobs.Config) { j.JobName = "u"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	p := startProducer(r)

	r.clk.Set(t0.Add(1500 * time.Millisecond))
	j.ShardingTotalCount = 2
	if err := r.reg.Config().UpdateJobAt(r.ctx, j, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(2 * time.Second))
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 0 {
		t.Fatalf("%d executions for the instant of 2 s on the replaced configuration, want 0 (void)", n)
	}
	r.clk.Set(t0.Add(2500 * time.Millisecond))
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "u"})
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 1 {
		t.Errorf("%d executions after the update was applied, want 1 (the instant of 2 s, once)", n)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(4*time.Second)) {
		t.Errorf("next fire at %v, want t0+4s", at)
	}
}

// TestAnOldCronsInstantNeverFiresAfterAnUpdate: a cron update committed
// before the old cron's next instant, applied by the loop only after it:
// that instant, after the change's stamp, would pass the job's gate and
// fire a run of a cron no longer in force. It is void (the fire carries
// the configuration it was computed from), and the job fires on the new
// cron from the change's instant.
func TestAnOldCronsInstantNeverFiresAfterAnUpdate(t *testing.T) {
	for _, misfire := range []bool{false, true} {
		t.Run(fmt.Sprintf("misfire=%v", misfire), func(t *testing.T) {
			r := newRig(t)
			r.addApp("app", 1, 128)
			j := r.addJob(func(j *jobs.Config) { j.JobName = "u"; j.Cron = "0/2 * * * * ?"; j.Misfire = misfire })
			p := startProducer(r)

			r.clk.Set(t0.Add(1500 * time.Millisecond)) // the update commits: every 3 s from now on
			j.Cron = "0/3 * * * * ?"
			if err := r.reg.Config().UpdateJobAt(r.ctx, j, r.clk.Now()); err != nil {
				t.Fatal(err)
			}
			r.clk.Set(t0.Add(2 * time.Second)) // the old cron's instant: its fire commits before the loop applies the update
			fireAllDue(r, p)
			if n := r.readyCount("u"); n != 0 {
				t.Fatalf("%d executions for the old cron's instant of 2 s after the update, want 0", n)
			}
			if w, err := r.reg.Schedule().Watermark(r.ctx); err != nil || !w.Until.Equal(t0.Add(2*time.Second)) {
				t.Errorf("watermark %+v %v, want t0+2s (the void fire's batch is recorded)", w, err)
			}
			r.clk.Set(t0.Add(2500 * time.Millisecond))
			r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "u"})
			fireAllDue(r, p)
			if n := r.readyCount("u"); n != 0 {
				t.Errorf("%d executions once the update is applied at 2.5 s, want 0 (the new cron's next is 3 s)", n)
			}
			if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(3*time.Second)) {
				t.Errorf("next fire at %v, want the new cron's t0+3s", at)
			}
			r.clk.Set(t0.Add(3 * time.Second))
			fireAllDue(r, p)
			if n := r.readyCount("u"); n != 1 {
				t.Errorf("%d executions at 3 s, want 1", n)
			}
		})
	}
}

// TestAChangeAppliedDuringAFireCommit: the loop applies an update while
// the producer's commit of the old cron's instant is in flight: the fire
// is void, and the reschedule the change makes does not count its
// instant as taken (the new cron's instant of the same time fires).
func TestAChangeAppliedDuringAFireCommit(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := r.addJob(func(j *jobs.Config) { j.JobName = "u"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	p := startProducer(r)
	r.clk.Set(t0.Add(1500 * time.Millisecond))
	j.ShardingTotalCount = 2 // the same cron: its instant of 2 s is the new configuration's too
	if err := r.reg.Config().UpdateJobAt(r.ctx, j, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	d := &applyDuring{registryDispatcher: registryDispatcher{r: r.reg}, apply: func() {
		r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "u"})
	}}
	p.Dispatch = d
	r.clk.Set(t0.Add(2 * time.Second))
	p.fireDue(r.ctx) // the old configuration's 2 s: void; the update applied meanwhile
	if n := r.readyCount("u"); n != 0 {
		t.Fatalf("%d executions from the replaced configuration, want 0", n)
	}
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 1 {
		t.Errorf("%d executions, want 1: the instant of 2 s on the new configuration", n)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(4*time.Second)) {
		t.Errorf("next fire at %v, want t0+4s", at)
	}
}

// TestAChangesRescheduleCountsANewFireInFlight: the catalog took an
// update after the producer computed its fire of 2 s from the old
// configuration, and the loop's reschedule for the update comes only
// while the fire of 4 s is in flight. The fire of 2 s is void, and the
// producer reschedules the job from the update's instant itself, so 2 s
// fires on the new configuration, late, instead of being lost; the fire
// of 4 s lands, so the loop's reschedule does not schedule its instant
// again.
func TestAChangesRescheduleCountsANewFireInFlight(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := r.addJob(func(j *jobs.Config) { j.JobName = "u"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	p := startProducer(r)
	r.clk.Set(t0.Add(1500 * time.Millisecond))
	j.ShardingTotalCount = 2
	if err := r.reg.Config().UpdateJobAt(r.ctx, j, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	change := registry.ConfigChange{Kind: registry.ConfigJob, Name: "u"}
	if err := r.sched.catalog.apply(r.ctx, change); err != nil { // the loop took the change; its reaction comes later
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(2 * time.Second))
	p.fireDue(r.ctx) // computed before the catalog took the update: void; 2 s again, on the new configuration
	if n := r.readyCount("u"); n != 0 {
		t.Fatalf("%d executions from the replaced configuration, want 0", n)
	}
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 1 {
		t.Fatalf("%d executions, want 1: the instant of 2 s on the new configuration, late", n)
	}
	p.Dispatch = &applyDuring{registryDispatcher: registryDispatcher{r: r.reg}, apply: func() {
		r.sched.config.jobChanged(r.ctx, "u", r.sched.config.changedAt(r.ctx, "u"))
	}}
	r.clk.Set(t0.Add(4 * time.Second))
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 2 {
		t.Errorf("%d executions, want 2: the instants of 2 s and 4 s once each", n)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(6*time.Second)) {
		t.Errorf("next fire at %v, want t0+6s (4 s landed while the reschedule ran)", at)
	}
}

// TestACatalogBehindTheRegistryIsRefreshed: the loop never applied a cron
// update (the catalog's read of it failed under a registry fault, and
// nothing else changed the job): its fires from the old cron are void,
// and the first one found void makes the loop reload the job, which then
// fires on the new cron from the change.
func TestACatalogBehindTheRegistryIsRefreshed(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := r.addJob(func(j *jobs.Config) { j.JobName = "u"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	p := startProducer(r)
	stale := 0
	p.Events = staleEvents{Events: p.Events, stale: func(ctx context.Context, job string, config uint64) { // the loop's turn, at once
		stale++
		r.sched.config.refresh(ctx, job, config)
	}}
	r.clk.Set(t0.Add(1500 * time.Millisecond))
	j.Cron = "0/3 * * * * ?"
	if err := r.reg.Config().UpdateJobAt(r.ctx, j, r.clk.Now()); err != nil { // its change never reaches the loop
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(2 * time.Second))
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 0 {
		t.Fatalf("%d executions of the old cron's 2 s, want 0", n)
	}
	if held, ok := r.sched.catalog.Job("u"); stale != 1 || !ok || held.Cron != j.Cron {
		t.Fatalf("told %d time(s); the catalog holds cron %q, want the update's %q after one", stale, held.Cron, j.Cron)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Errorf("next fire at %v, want the new cron's t0+3s", at)
	}
	r.clk.Set(t0.Add(3 * time.Second))
	fireAllDue(r, p)
	if n := r.readyCount("u"); n != 1 {
		t.Errorf("%d executions at 3 s, want 1", n)
	}
}

// applyDuring runs apply once, as its first commit of fires is in flight.
type applyDuring struct {
	registryDispatcher
	apply func()
}

func (d *applyDuring) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) ([]string, error) {
	if f := d.apply; f != nil {
		d.apply = nil
		f()
	}
	return d.registryDispatcher.TriggerFires(ctx, fires, instant, commit, absent)
}

// TestAnAppEnableSchedulesItsJobsFromNow: an app's disable flag records no
// instant, and a job's gate names its own last change, which may be long
// before the app went off: its jobs are scheduled from when the loop
// applied the app's enable, not from the job's gate (that would fire the
// instants the app spent disabled).
func TestAnAppEnableSchedulesItsJobsFromNow(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "a", false, t0); err != nil { // its gate: t0
		t.Fatal(err)
	}
	if err := r.reg.Config().SetDisabled(r.ctx, "app", "app", true, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	p := startProducer(r)
	r.clk.Set(t0.Add(10 * time.Second))
	if err := r.reg.Config().SetDisabled(r.ctx, "app", "app", false, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigAppDisabled, Name: "app"})
	fireAllDue(r, p)
	if n := r.readyCount("a"); n != 0 {
		t.Errorf("%d executions for the instants the app spent disabled, want 0", n)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(t0.Add(12*time.Second)) {
		t.Errorf("next fire at %v, want t0+12s", at)
	}
}

// TestWatermarkNeverGoesBack: fires committed for an instant before one
// already committed (a job enabled late, scheduled from its change's
// instant; a job registered after later instants were staged ahead) do
// not move the watermark back: a takeover would replay, from the lower
// mark, instants the registry already holds (docs/jobs.md: instants at or
// before the watermark are never fired again).
func TestWatermarkNeverGoesBack(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.Cron = "0/2 * * * * ?"; j.Misfire = true })
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "c", true, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	p := startProducer(r)
	r.clk.Set(t0.Add(2700 * time.Millisecond)) // c's enable commits
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "c", false, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{2, 4, 6} { // a's fires of 2, 4 and 6 s commit
		r.clk.Set(t0.Add(at * time.Second))
		fireAllDue(r, p)
	}
	mark := func() time.Time {
		t.Helper()
		w, err := r.reg.Schedule().Watermark(r.ctx)
		if err != nil || !w.OK {
			t.Fatalf("watermark: %v %v", w, err)
		}
		return w.Until
	}
	if got := mark(); !got.Equal(t0.Add(6 * time.Second)) {
		t.Fatalf("watermark %v after a's fire of 6 s, want t0+6s", got)
	}
	d := &markDispatcher{registryDispatcher: registryDispatcher{r: r.reg}}
	p.Dispatch = d
	r.clk.Set(t0.Add(6900 * time.Millisecond)) // the loop applies c's enable: its 4 s and 6 s are due
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJobDisabled, Name: "c"})
	fireAllDue(r, p)
	if n := r.readyCount("c"); n != 2 {
		t.Fatalf("c: %d executions, want 2 (4 s and 6 s replayed)", n)
	}
	for i, at := range d.at {
		if at.Before(t0.Add(6 * time.Second)) {
			t.Errorf("commit %d after c's enable wrote the watermark %v, back from t0+6s", i, at)
		}
	}
	if got := mark(); got.Before(t0.Add(6 * time.Second)) {
		t.Errorf("watermark went back to %v after c's late fires, want t0+6s at least", got)
	}
}

// markDispatcher commits through the registry and records the watermark
// each commit writes.
type markDispatcher struct {
	registryDispatcher
	at []time.Time
}

func (d *markDispatcher) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) ([]string, error) {
	d.at = append(d.at, instant)
	return d.registryDispatcher.TriggerFires(ctx, fires, instant, commit, absent)
}
