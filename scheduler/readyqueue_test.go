package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
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
	r.sched.queues.watched.Store(true)
	r.trigger("a")

	q, err := r.sched.queues.ready(r.ctx, r.clk.Now())
	if err != nil || len(q) != 1 {
		t.Fatalf("queue %+v %v", q, err)
	}
	// A change nobody counted (the watch's event not yet delivered) is
	// not seen: the read is reused.
	r.trigger("b")
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 1 {
		t.Fatalf("read again without a counted change: %+v", q)
	}
	// The watch's event counts it.
	r.sched.queues.gen.Add(1)
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 2 {
		t.Fatalf("after a counted change: %+v", q)
	}
	// A read is reused for at most readyMaxAge, even without a counted
	// change.
	if err := r.kv.Commit(r.ctx, store.Delete(registry.ReadyPath+"/b", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 2 {
		t.Fatalf("read again without a counted change: %+v", q)
	}
	r.clk.Advance(readyMaxAge)
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 1 {
		t.Fatalf("a read reused past readyMaxAge: %+v", q)
	}
	r.trigger("b")
	r.sched.queues.gen.Add(1)
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 2 {
		t.Fatalf("after a counted change: %+v", q)
	}
	// The loop's own launch dequeues and counts at once.
	before := r.sched.queues.gen.Load()
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if r.sched.queues.gen.Load() == before {
		t.Fatal("a launch's dequeue did not count as a change")
	}
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 0 {
		t.Fatalf("after the loop's own launch: %+v", q)
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
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 1 {
		t.Fatalf("queue %+v", q)
	}
	r.trigger("b")
	if q, _ := r.sched.queues.ready(r.ctx, r.clk.Now()); len(q) != 2 {
		t.Fatalf("queue %+v", q)
	}
}

// TestWorkThatCanNeverFitHoldsNothingBack is the trial on a
// 2-CPU machine: an execution of 600 shards of 0.1 CPU can never fit, so
// it waits with its own reason while a 1-shard job queued after it runs.
func TestWorkThatCanNeverFitHoldsNothingBack(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "big", 600, 0.1, 16 })
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "small", 1, 0.5, 64 })
	r.trigger("big")
	r.clk.Advance(time.Second)
	r.trigger("small")
	r.offer("o1", 2, 7800)
	r.sched.launcher.round(r.ctx)
	if len(r.running("small")) != 1 || len(r.running("big")) != 0 {
		t.Fatalf("running small %v, big %d shards; want small running", r.running("small"), len(r.running("big")))
	}
	r.clk.Advance(waitRecordAfter)
	r.sched.launcher.round(r.ctx)
	w := r.waiting()[queue.WaitKey(false, "big", 0)]
	if w.Reason != queue.WaitTooLarge || !strings.Contains(w.Message, "can never fit: it needs 60.1 CPUs") {
		t.Fatalf("big waits %+v", w)
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
		if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
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
