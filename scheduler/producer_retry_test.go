package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// refusingKV refuses every commit while refuse is set, as a store on a
// full disk does.
type refusingKV struct {
	store.KV
	refuse atomic.Bool
}

var errDiskFull = errors.New("database or disk is full")

func (k *refusingKV) Commit(ctx context.Context, ops ...store.Op) error {
	if k.refuse.Load() {
		return errDiskFull
	}
	return k.KV.Commit(ctx, ops...)
}

// A fire commit the store refuses (a full disk) is retried until it
// commits: the term goes on, so no catch-up would replay it.
func TestProducerRetriesAFireCommitTheStoreRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	kv := &refusingKV{KV: mem}
	r := &rig{t: t, ctx: ctx, reg: registry.New(kv), kv: kv, drv: newFakeDriver(), clk: clock.NewFake(t0)}
	r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "0/5 * * * * ?"; j.Misfire = true })
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	kv.refuse.Store(true)
	r.clk.Advance(5 * time.Second)
	armedAt(t, r, t0.Add(5*time.Second+commitRetryMin)) // the retry's wait
	r.clk.Advance(commitRetryMin)
	armedAt(t, r, t0.Add(5*time.Second+3*commitRetryMin)) // refused again: twice the wait
	kv.refuse.Store(false)
	r.clk.Advance(2 * commitRetryMin)
	if got := nextFire(t, fired); len(got) != 1 || got[0] != "grow" {
		t.Fatalf("fired %v, want grow once the store takes writes again", got)
	}
	if c := r.readyCount("grow"); c != 1 {
		t.Fatalf("ready count %d, want the refused fire committed once", c)
	}
}

// A catch-up whose commit the store refuses (a lost quorum or a slow
// registry at the start of a term) is tried again until it commits:
// giving up, the term would go on from its own clock and its first fire
// commit would move the watermark past the missed fires, so no leader
// would ever replay them (misfire=true fires lost).
func TestProducerRetriesACatchUpTheStoreRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	kv := &refusingKV{KV: mem}
	r := &rig{t: t, ctx: ctx, reg: registry.New(kv), kv: kv, drv: newFakeDriver(), clk: clock.NewFake(t0.Add(12 * time.Second))}
	r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "0/5 * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "collapse"; j.Cron = "0/5 * * * * ?" })
	if err := r.reg.Schedule().TriggerMissed(ctx, nil, t0); err != nil { // the last term fired up to t0
		t.Fatal(err)
	}
	kv.refuse.Store(true)
	fired := runProducer(t, r)
	now := t0.Add(12 * time.Second)
	armedAt(t, r, now.Add(commitRetryMin)) // the catch-up was refused: its retry's wait
	r.clk.Advance(commitRetryMin)
	armedAt(t, r, now.Add(3*commitRetryMin)) // refused again: twice the wait
	if c := r.readyCount("grow"); c != 0 {
		t.Fatalf("ready count %d while the store refuses writes", c)
	}
	kv.refuse.Store(false)
	r.clk.Advance(2 * commitRetryMin)
	if got := nextFire(t, fired); len(got) != 2 {
		t.Fatalf("fired %v, want the catch-up of grow and collapse", got)
	}
	if c := r.readyCount("grow"); c != 2 {
		t.Fatalf("grow (misfire=true): ready count %d, want the fires at +5s and +10s replayed", c)
	}
	if c := r.readyCount("collapse"); c != 1 {
		t.Fatalf("collapse (misfire=false): ready count %d, want one execution for both", c)
	}
	w, err := r.reg.Schedule().Watermark(ctx)
	if err != nil || !w.OK || !w.Until.Equal(now) {
		t.Fatalf("watermark %+v (%v), want the instant the catch-up counted its fires to, %v (every try commits those)", w, err, now)
	}
	armedAt(t, r, t0.Add(15*time.Second)) // then on schedule
}
