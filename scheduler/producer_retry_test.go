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

// A fire commit the store refuses is retried until it commits: the term
// goes on, so no catch-up would replay it (the fault soak lost fires on a
// full disk before).
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
