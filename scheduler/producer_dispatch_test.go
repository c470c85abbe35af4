package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// recordingDispatcher takes the producer's fires instead of the registry.
type recordingDispatcher struct {
	mu    sync.Mutex
	fires []string
	at    []time.Time
}

func (d *recordingDispatcher) TriggerFires(_ context.Context, fires map[string]registry.CronFire, instant time.Time, _ string, _ func(string) bool) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for job := range fires {
		d.fires = append(d.fires, job)
	}
	d.at = append(d.at, instant)
	return nil, nil
}

func (d *recordingDispatcher) TriggerMissed(context.Context, map[string]registry.Missed, time.Time, string) error {
	return nil
}

// TestProducerCommitsThroughItsDispatcher: the producer's fires go to its
// Dispatcher (the registry when none is set), nowhere else.
func TestProducerCommitsThroughItsDispatcher(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/5 * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "b"; j.Cron = "0/5 * * * * ?" })
	d := &recordingDispatcher{}
	r.sched.producer.Dispatch = d
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(5 * time.Second)
	nextFire(t, fired)
	d.mu.Lock()
	got, at := slices.Sorted(slices.Values(d.fires)), slices.Clone(d.at)
	d.mu.Unlock()
	if !slices.Equal(got, []string{"a", "b"}) || len(at) != 1 || !at[0].Equal(t0.Add(5*time.Second)) {
		t.Fatalf("dispatched %v at %v, want a and b at the 5 s instant", got, at)
	}
	if c := r.readyCount("a") + r.readyCount("b"); c != 0 {
		t.Fatalf("the registry got %d ready entries besides the dispatcher", c)
	}
}

// disablingDispatcher lets a disable land and be acted on (the catalog
// takes it, the follower clears the job's queues) while the producer's
// fire commit is in flight, then commits the fires to the registry.
type disablingDispatcher struct {
	r   *rig
	job string
}

func (d disablingDispatcher) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) ([]string, error) {
	if err := d.r.reg.Config().SetDisabled(ctx, "job", d.job, true, instant); err != nil {
		return nil, err
	}
	d.r.sched.config.apply(ctx, registry.ConfigChange{Kind: registry.ConfigJobDisabled, Name: d.job})
	return d.r.reg.Work().TriggerFiresOnce(ctx, fires, instant, commit, absent)
}

func (d disablingDispatcher) TriggerMissed(ctx context.Context, missed map[string]registry.Missed, now time.Time, commit string) error {
	return d.r.reg.Schedule().TriggerMissedOnce(ctx, missed, now, commit)
}

// TestProducerDropsAFireCommittedAsItsJobWasDisabled: a disable whose
// clearing ran while a fire's commit was in flight leaves no pending
// execution behind, which would otherwise start when the job is enabled
// again, long after its instant; the other job's fire stays.
func TestProducerDropsAFireCommittedAsItsJobWasDisabled(t *testing.T) {
	checkDisabledJobsFireLeavesNothing(t, func(r *rig) Dispatcher { return disablingDispatcher{r: r, job: "a"} },
		"the disabled job keeps %d pending execution(s)")
}

// unseenDisableDispatcher commits a disable while the producer's fire
// commit is in flight that the leader never acts on before the commit
// ends: its catalog lags behind the registry (a registry-link fault), so
// neither the follower's clearing nor the producer's after-commit drop
// runs; the job is enabled again just after.
type unseenDisableDispatcher struct {
	r   *rig
	job string
}

func (d unseenDisableDispatcher) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) ([]string, error) {
	if err := d.r.reg.Config().SetDisabled(ctx, "job", d.job, true, instant.Add(-1400*time.Millisecond)); err != nil {
		return nil, err
	}
	void, err := d.r.reg.Work().TriggerFiresOnce(ctx, fires, instant, commit, absent)
	if err != nil {
		return void, err
	}
	return void, d.r.reg.Config().SetDisabled(ctx, "job", d.job, false, instant.Add(2202*time.Millisecond))
}

func (d unseenDisableDispatcher) TriggerMissed(ctx context.Context, missed map[string]registry.Missed, now time.Time, commit string) error {
	return d.r.reg.Schedule().TriggerMissedOnce(ctx, missed, now, commit)
}

// TestProducerFireNeverLandsAfterAnUnseenDisable: a disable the leader
// has not seen when its fire commit lands leaves nothing pending for the
// enable to run (a fire of an instant the job spent disabled, run just
// after the enable), by the fire's own commit (registry/gate.go), not by
// any clearing after it. The other job's fire stays.
func TestProducerFireNeverLandsAfterAnUnseenDisable(t *testing.T) {
	checkDisabledJobsFireLeavesNothing(t, func(r *rig) Dispatcher { return unseenDisableDispatcher{r: r, job: "a"} },
		"enabled again, the job has %d pending execution(s) of an instant it spent disabled")
}

// checkDisabledJobsFireLeavesNothing runs jobs a and b, every 5 s, through
// the dispatcher dispatch makes (one that disables a around the fire's
// commit): b's fire is reported and pending, a has nothing pending
// (failing with left, given a's pending count).
func checkDisabledJobsFireLeavesNothing(t *testing.T, dispatch func(r *rig) Dispatcher, left string) {
	t.Helper()
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.Cron = "0/5 * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "b"; j.Cron = "0/5 * * * * ?" })
	r.sched.producer.Dispatch = dispatch(r)
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(5 * time.Second)
	if got := nextFire(t, fired); !slices.Equal(got, []string{"b"}) {
		t.Errorf("reported %v, want b only", got)
	}
	if c := r.readyCount("a"); c != 0 {
		t.Fatalf(left, c)
	}
	if c := r.readyCount("b"); c != 1 {
		t.Fatalf("b has %d pending, want its fire", c)
	}
}
