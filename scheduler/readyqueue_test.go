package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// TestReadyQueueIsReadAgainOnlyAfterAChange: once the queue's watch runs,
// a round reuses the last read until a change is counted, and the loop's
// own commits to the queue count at once.
func TestReadyQueueIsReadAgainOnlyAfterAChange(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a" })
	r.addJob(func(j *jobs.Config) { j.JobName = "b" })
	r.sched.readyWatched.Store(true)
	r.trigger("a")

	q, err := r.sched.readyQueue(r.ctx)
	if err != nil || len(q) != 1 {
		t.Fatalf("queue %+v %v", q, err)
	}
	// A change nobody counted (the watch's event not yet delivered) is
	// not seen: the read is reused.
	r.trigger("b")
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 1 {
		t.Fatalf("read again without a counted change: %+v", q)
	}
	// The watch's event counts it.
	r.sched.readyGen.Add(1)
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 2 {
		t.Fatalf("after a counted change: %+v", q)
	}
	// A read is reused for at most readyMaxAge, even without a counted
	// change.
	if err := r.reg.KV().Commit(r.ctx, store.Delete(registry.ReadyPath+"/b", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 2 {
		t.Fatalf("read again without a counted change: %+v", q)
	}
	r.clk.Advance(readyMaxAge)
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 1 {
		t.Fatalf("a read reused past readyMaxAge: %+v", q)
	}
	r.trigger("b")
	r.sched.readyGen.Add(1)
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 2 {
		t.Fatalf("after a counted change: %+v", q)
	}
	// The loop's own commit under the queue counts at once.
	if err := r.sched.Registry.KV().Commit(r.ctx, store.Delete(registry.ReadyPath+"/b", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 1 || q[0].Job != "a" {
		t.Fatalf("after the loop's own commit: %+v", q)
	}
	// A commit elsewhere does not.
	before := r.sched.readyGen.Load()
	if err := r.sched.Registry.KV().Commit(r.ctx, store.Put("/state/other", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if r.sched.readyGen.Load() != before {
		t.Fatal("a commit outside the ready queue counted as a change")
	}
}

// TestReadyQueueWithoutWatchIsReadEveryRound: a loop driven by hand (no
// watch) never reuses a read.
func TestReadyQueueWithoutWatchIsReadEveryRound(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a" })
	r.addJob(func(j *jobs.Config) { j.JobName = "b" })
	r.trigger("a")
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 1 {
		t.Fatalf("queue %+v", q)
	}
	r.trigger("b")
	if q, _ := r.sched.readyQueue(r.ctx); len(q) != 2 {
		t.Fatalf("queue %+v", q)
	}
}

// considered is how many of reqs a round tries (see trying).
func considered(reqs []offers.Request, offs []offers.Offer) int {
	t := newTrying(offs, 0)
	for i, r := range reqs {
		if !t.admit(r) {
			return i
		}
	}
	return len(reqs)
}

func req(job string, shard int, cpu float64) offers.Request {
	return offers.Request{Job: job, Shard: shard, Kind: offers.Ready, Task: offers.Resources{CPU: offers.CPUs(cpu), MemMB: offers.MemMB(16)}}
}

// TestConsideredCutsALongQueueBetweenJobs: a short queue is tried whole;
// a long one up to twice the free resources (at least considerAtLeast
// requests), never splitting a job's gang.
func TestConsideredCutsALongQueueBetweenJobs(t *testing.T) {
	offs := []offers.Offer{{ID: "o", Free: offers.Resources{CPU: offers.CPUs(10), MemMB: offers.MemMB(1 << 20)}}}
	var short []offers.Request
	for i := range considerAtLeast {
		short = append(short, req(fmt.Sprint("j", i), 0, 1))
	}
	if got := considered(short, offs); got != len(short) {
		t.Fatalf("short queue cut at %d", got)
	}
	// 600 jobs of 3 shards: 1,800 requests asking for 1,800 CPUs.
	var long []offers.Request
	for i := range 600 {
		for s := range 3 {
			long = append(long, req(fmt.Sprint("j", i), s, 1))
		}
	}
	cut := considered(long, offs)
	if cut < considerAtLeast || cut >= len(long) {
		t.Fatalf("cut at %d of %d", cut, len(long))
	}
	if long[cut].Job == long[cut-1].Job {
		t.Fatalf("cut inside job %s's gang", long[cut].Job)
	}
	// A cluster with room for everything tries everything.
	big := []offers.Offer{{ID: "o", Free: offers.Resources{CPU: offers.CPUs(1000), MemMB: offers.MemMB(1 << 20)}}}
	if got := considered(long, big); got != len(long) {
		t.Fatalf("roomy cluster cut at %d", got)
	}
}

// TestWorkBehindALongQueueSaysSo: executions a round did not try get
// the behind_older_work reason, the oldest ones their own.
func TestWorkBehindALongQueueSaysSo(t *testing.T) {
	r := newRig(t)
	const n = considerAtLeast + 40
	r.backlog(n, 1)
	// Nothing fits: 4 CPUs a shard and 1 for the executor. The offer is
	// declined each round, so it is offered again for the next.
	r.offer("o1", 2, 4096)
	r.sched.launch(r.ctx)
	r.clk.Advance(waitRecordAfter)
	r.offer("o2", 2, 4096)
	r.sched.launch(r.ctx)
	got := r.waiting()
	first, last := got[registry.WaitingKey("ready", "job-000", 0)], got[registry.WaitingKey("ready", fmt.Sprintf("job-%03d", n-1), 0)]
	if first.Reason == registry.WaitBehind || first.Reason == "" {
		t.Fatalf("oldest: %+v", first)
	}
	if last.Reason != registry.WaitBehind || !strings.Contains(last.Message, "behind older work") {
		t.Fatalf("youngest: %+v", last)
	}
	if len(r.drv.accepts) != 0 {
		t.Fatalf("accepts %+v", r.drv.accepts)
	}
}

// TestSnapshotBuildsRequestsOnlyForWhatTheRoundTries: a backlog costs a
// round what it tries; the rest is named, with no request built, and still
// counts in the ready depth.
func TestSnapshotBuildsRequestsOnlyForWhatTheRoundTries(t *testing.T) {
	r := newRig(t)
	const n = considerAtLeast + 40
	r.backlog(n, 2)
	r.offer("o1", 2, 4096) // 2 CPUs free: twice that is passed after the first job
	w, err := r.sched.snapshot(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.requests) != considerAtLeast || len(w.ready) != considerAtLeast/2 {
		t.Fatalf("%d requests for %d executions, want %d for %d", len(w.requests), len(w.ready), considerAtLeast, considerAtLeast/2)
	}
	if want := n - considerAtLeast/2; len(w.later) != want || w.laterReady != want {
		t.Fatalf("later %d (%d ready), want %d", len(w.later), w.laterReady, want)
	}
	if w.later[0] != registry.WaitingKey("ready", fmt.Sprintf("job-%03d", considerAtLeast/2), 0) {
		t.Fatalf("first left for later: %s", w.later[0])
	}
	if got := considered(w.requests, w.offers); got != len(w.requests) {
		t.Fatalf("considered cuts the tried requests again at %d", got)
	}
}

// backlog registers n jobs job-000… of shards shards of 4 CPUs each on
// app "app" and triggers them in that order.
func (r *rig) backlog(n, shards int) {
	r.t.Helper()
	r.addApp("app", 1, 128)
	for i := range n {
		j := jobs.Default()
		j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = fmt.Sprintf("job-%03d", i), "app", 4, 64, shards
		if err := r.reg.AddJob(r.ctx, j); err != nil {
			r.t.Fatal(err)
		}
	}
	r.reload()
	for i := range n {
		r.trigger(fmt.Sprintf("job-%03d", i))
		r.clk.Advance(time.Millisecond) // arrival order is the trigger order
	}
}

func TestRoundGap(t *testing.T) {
	if roundGap(500*time.Microsecond) != 0 {
		t.Fatal("a cheap round is spaced out")
	}
	if roundGap(20*time.Millisecond) != 20*time.Millisecond {
		t.Fatal("an expensive round is not followed by as long for events")
	}
}
