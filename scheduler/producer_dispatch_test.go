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

func (d *recordingDispatcher) TriggerFires(_ context.Context, fires map[string]registry.CronFire, instant time.Time, _ func(string) bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for job := range fires {
		d.fires = append(d.fires, job)
	}
	d.at = append(d.at, instant)
	return nil
}

func (d *recordingDispatcher) TriggerMissed(context.Context, map[string]registry.Missed, time.Time) error {
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
