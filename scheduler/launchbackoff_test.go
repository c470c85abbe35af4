package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
)

// apiServerDown is how the Kubernetes engine's Accept fails while its API server is down
// (three of four pods made before it went, the fourth's creation refused its
// connection).
var apiServerDown = fmt.Errorf("kube: create pods: 1 of 4 failed, the outcome of x unknown: %w: Post \"https://127.0.0.1:6443/api/v1/namespaces/ns/pods\": dial tcp 127.0.0.1:6443: connect: connection refused",
	engine.ErrUnavailable)

// step is one turn of the loop as the engine drives it while a launch fails: the engine
// offers the resources the failed Accept left again at once, and the re-queue of the
// rolled-back execution wakes the launcher; then tick of simulated time passes.
func (r *rig) step(i int, tick time.Duration) {
	if len(r.sched.st.offers) == 0 {
		r.offer(fmt.Sprintf("o%d", i), 8, 4096)
	}
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(tick)
}

func taskIDs(c acceptCall) []string {
	var ids []string
	for _, l := range c.launches {
		ids = append(ids, l.TaskID)
	}
	slices.Sort(ids)
	return ids
}

// TestUnavailableEngineBacksLaunchesOff: while the engine cannot be reached, the launcher
// does not retry a rolled-back launch at every turn (about 20 a second for as long as
// its API server is down) but with a doubling wait, at most backoffMax; once
// the engine answers, the execution launches once, under the task ids it had.
func TestUnavailableEngineBacksLaunchesOff(t *testing.T) {
	r := queuedJob(t, 4)
	r.drv.acceptErr = apiServerDown
	const tick = 50 * time.Millisecond
	down := 12 * time.Second
	for i := range int(down / tick) {
		r.step(i, tick)
		if n := len(r.running("job")); n != 0 {
			t.Fatalf("turn %d: %d running entries while every ACCEPT fails", i, n)
		}
		if r.readyCount("job") != 1 {
			t.Fatalf("turn %d: the rolled-back execution is not queued", i)
		}
	}
	if w := r.sched.launcher.scratch[queue.WaitKey(false, "job", 0)]; w.Reason != queue.WaitUnavailable {
		t.Fatalf("the rolled-back execution waits with %+v, want %s", w, queue.WaitUnavailable)
	}
	// Attempts at 0, 0.1, 0.3, 0.7, 1.5, 3.1 s, then every 2 s: 10 in 12 s, not 240.
	if n := len(r.drv.tried); n < 2 || n > 10 {
		t.Fatalf("%d ACCEPTs in %v of an unavailable engine at a turn every %v, want 2..10", n, down, tick)
	}
	first := taskIDs(r.drv.tried[0])
	r.drv.acceptErr = nil // the API server is back
	back := r.clk.Now()
	for i := 0; len(r.drv.accepts) == 0; i++ {
		if r.clk.Now().Sub(back) > backoffMax {
			t.Fatalf("nothing launched %v after the engine came back", backoffMax)
		}
		r.step(1000+i, tick)
	}
	for i := range 40 { // and nothing again
		r.step(2000+i, tick)
	}
	if n := len(r.drv.accepts); n != 1 {
		t.Fatalf("%d ACCEPTs after the engine came back, want 1", n)
	}
	if got := taskIDs(r.drv.accepts[0]); !slices.Equal(got, first) {
		t.Fatalf("launched %v, want the rolled-back launch's ids %v (a pod made meanwhile is adopted by its name)", got, first)
	}
	if n, q := len(r.running("job")), r.readyCount("job"); n != 4 || q != 0 {
		t.Fatalf("running %d, ready %d: want the execution's 4 shards running and nothing queued", n, q)
	}
	if r.sched.launcher.backoff.wait != 0 {
		t.Fatal("the backoff outlived a successful ACCEPT")
	}
}

// TestBackoffGrowsAndIsCapped: each round that finds the engine unavailable doubles the
// wait from backoffFirst up to backoffMax; a successful ACCEPT ends it, and the next
// failure waits backoffFirst again.
func TestBackoffGrowsAndIsCapped(t *testing.T) {
	var b engineBackoff
	now := t0
	var waits []time.Duration
	for range 7 {
		w := b.failed(now)
		waits = append(waits, w)
		now = now.Add(w)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	if rounds, since := b.reset(); rounds != 7 || !since.Equal(t0) {
		t.Fatalf("reset: %d rounds since %v, want 7 since %v", rounds, since, t0)
	}
	if w := b.failed(now); w != backoffFirst {
		t.Fatalf("the first wait after a reset is %v, want %v", w, backoffFirst)
	}
}

// TestNewSubscriptionEndsTheBackoff: the engine subscribed to again answers again: the
// rolled-back launch goes at the first round with offers, not at the wait's end.
func TestNewSubscriptionEndsTheBackoff(t *testing.T) {
	r := queuedJob(t, 1)
	r.drv.acceptErr = apiServerDown
	for i := range 5 { // backoff at 800 ms
		r.step(i, 0)
		r.clk.Advance(r.sched.launcher.backoff.until.Sub(r.clk.Now()))
	}
	r.step(5, 0)
	r.drv.acceptErr = nil
	r.clk.Advance(time.Millisecond)
	r.sched.Subscribed(r.ctx, "fw")
	r.sched.handleUpdates(r.ctx)
	r.offer("again", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if n := len(r.drv.accepts); n != 1 {
		t.Fatalf("%d ACCEPTs in the first round after a new subscription, want 1", n)
	}
}

// TestAnsweredAcceptFailureIsRetriedAtOnce: an ACCEPT the engine answered with a failure
// (here, an offer it no longer has) starts no backoff: the next round launches (Mesos
// under a healthy master is unchanged).
func TestAnsweredAcceptFailureIsRetriedAtOnce(t *testing.T) {
	r := queuedJob(t, 1)
	r.drv.acceptErr = errors.New("ACCEPT: unknown offer o0")
	r.step(0, 0)
	r.drv.acceptErr = nil
	r.step(1, 0)
	if n, m := len(r.drv.tried), len(r.drv.accepts); n != 2 || m != 1 {
		t.Fatalf("%d ACCEPTs tried, %d succeeded: want the refused launch retried at the next round", n, m)
	}
}

// queuedJob is a rig with one execution of a job of shards shards queued.
func queuedJob(t *testing.T, shards int) *rig {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = shards })
	r.trigger("job")
	return r
}
