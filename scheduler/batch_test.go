package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// TestBatchOfUpdatesCommitsOnce: the updates that arrive together are
// handled in one commit; each reads what the earlier ones wrote (the
// shards of one keyed run all land in its record), and all are
// acknowledged after the commit.
func TestBatchOfUpdatesCommitsOnce(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 3 })
	if _, err := r.reg.Work().TriggerRun(r.ctx, "job", queue.PendingRun{IdempotencyKey: "k1"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	running := r.running("job")
	if len(running) != 3 {
		t.Fatalf("running %v", running)
	}
	acked := 0
	for item := range 3 {
		for _, state := range []string{"TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"} {
			r.sched.updates = append(r.sched.updates, pendingUpdate{
				st: engine.Status{TaskID: running[item].TaskID, AgentID: "agent-1", State: task.State(state)},
				done: func(ok bool) {
					if ok {
						acked++
					}
				},
			})
		}
	}
	r.sched.handleUpdates(r.ctx)
	if acked != 9 {
		t.Fatalf("%d of 9 updates acknowledged", acked)
	}
	if len(r.running("job")) != 0 {
		t.Fatal("finished tasks still running")
	}
	rec, err := r.reg.Work().RunRecordOf(r.ctx, "k1")
	if err != nil || !rec.Done || !rec.Success || len(rec.Shards) != 3 {
		t.Fatalf("run record %+v %v: want all 3 shards, done and successful", rec, err)
	}
}

// TestFailedBatchIsNotAcknowledged: when the batch's commit fails (here:
// the leadership it is fenced on ended), no update is acknowledged, so
// Mesos resends them.
func TestFailedBatchIsNotAcknowledged(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	task := r.running("job")[0].TaskID
	if err := r.kv.Commit(r.ctx, store.Create("/ha/election/n_1", nil)); err != nil {
		t.Fatal(err)
	}
	fence := func() []store.Op { return []store.Op{store.Check("/ha/election/n_1", store.AnyVersion)} }
	r.rebuild(func(d *Deps) { d.Registry = registry.New(r.kv, registry.Options{Fence: fence}) })
	if err := r.kv.Commit(r.ctx, store.Delete("/ha/election/n_1", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	var results []bool
	r.sched.updates = []pendingUpdate{{st: engine.Status{TaskID: task, AgentID: "agent-1", State: "TASK_FINISHED"},
		done: func(ok bool) { results = append(results, ok) }}}
	r.sched.handleUpdates(r.ctx)
	if len(results) != 1 || results[0] {
		t.Fatalf("results %v, want the update refused", results)
	}
	if _, err := r.reg.Work().RunningOf(r.ctx, "job"); err != nil || len(r.running("job")) != 1 {
		t.Fatal("a fenced batch changed the registry")
	}
}

// TestUpdatesNeverWaitForTheLoop: the stream's events queue without the
// loop (the Mesos event stream is read on while a launch round runs), in
// their order: the updates before another event are handled before it.
func TestUpdatesNeverWaitForTheLoop(t *testing.T) {
	r := newRig(t)
	var order []string
	const n = 3 * 1024 // more than the loop's event queue holds
	for i := range n {
		if i == n-1 {
			r.sched.Rescinded(r.ctx, "o1")
			r.sched.fromStream(r.ctx, func(context.Context) { order = append(order, "event") })
		}
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "not-ours", State: "TASK_RUNNING"}, func(bool) { order = append(order, "update") })
	}
	if len(r.sched.events) != 0 || len(r.sched.inbox) != n+2 {
		t.Fatalf("%d posted to the loop, %d queued", len(r.sched.events), len(r.sched.inbox))
	}
	for len(r.sched.inbox) > 0 { // a turn takes at most updatesPerTurn updates
		r.sched.handleUpdates(r.ctx)
	}
	if len(order) != n+1 || order[n-1] != "event" || order[n] != "update" || order[0] != "update" {
		t.Fatalf("handled %d, in the wrong order", len(order))
	}
}

// TestUpdatesAreHandledABoundedNumberPerTurn: one turn of the loop takes at
// most updatesPerTurn status updates; the rest, and the stream's events
// queued behind them, wait in their order for the next turn, and launch
// rounds wait while more than backlogHold updates are queued.
func TestUpdatesAreHandledABoundedNumberPerTurn(t *testing.T) {
	r := newRig(t)
	var handled []int
	var order []string
	queue := func(n int) {
		for range n {
			i := len(order)
			order = append(order, "u")
			r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_RUNNING"},
				func(bool) { handled = append(handled, i) })
		}
	}
	queue(backlogHold + 1)
	if !r.sched.backlogged() {
		t.Fatal("launch rounds not held with a backlog of updates")
	}
	event := -1
	r.sched.fromStream(r.ctx, func(context.Context) { event = len(handled) })
	queue(10)
	r.sched.handleUpdates(r.ctx)
	if len(handled) != updatesPerTurn || event != -1 {
		t.Fatalf("first turn handled %d updates (event at %d), want %d and the event later", len(handled), event, updatesPerTurn)
	}
	if r.sched.backlogged() {
		t.Fatal("still held after a turn brought the backlog under the bound")
	}
	for len(handled) < len(order) {
		r.sched.handleUpdates(r.ctx)
	}
	if event != backlogHold+1 {
		t.Fatalf("the stream's event handled after %d updates, want after the %d queued before it", event, backlogHold+1)
	}
	for i, h := range handled {
		if h != i {
			t.Fatalf("update %d handled in position %d", h, i)
		}
	}
	if r.sched.inboxUpdates != 0 {
		t.Fatalf("%d updates still counted", r.sched.inboxUpdates)
	}
}

// TestUpdatesQueuedWhileATurnRunsComeAfterTheRest: what the stream queues
// while a turn handles the head of the inbox (here, from the handling
// itself) lands behind what was already waiting, and nothing is handled
// twice or lost, though the turn and the queue share the inbox's array.
func TestUpdatesQueuedWhileATurnRunsComeAfterTheRest(t *testing.T) {
	r := newRig(t)
	var handled []string
	update := func(name string, then func()) {
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_RUNNING"}, func(bool) {
			handled = append(handled, name)
			if then != nil {
				then()
			}
		})
	}
	var want []string
	for i := range updatesPerTurn + 5 {
		name := fmt.Sprint("u", i)
		want = append(want, name)
		var then func()
		if i == 0 || i == updatesPerTurn+1 {
			then = func() { update("late-"+name, nil) }
		}
		update(name, then)
	}
	want = append(want, "late-u0", "late-u"+fmt.Sprint(updatesPerTurn+1))
	for turns := 0; len(r.sched.inbox) > 0; turns++ {
		if turns == 10 {
			t.Fatal("the inbox does not drain")
		}
		r.sched.handleUpdates(r.ctx)
	}
	if !slices.Equal(handled, want) {
		t.Fatalf("handled %d updates: %v … %v, want %d ending %v", len(handled), handled[:3], handled[len(handled)-3:], len(want), want[len(want)-3:])
	}
	if r.sched.inboxUpdates != 0 {
		t.Fatalf("%d updates still counted", r.sched.inboxUpdates)
	}
}

// TestChainedBatchAcknowledgesTheAppliedParts: a turn's updates are
// committed as a chain of parts of maxBatch updates; when a later part
// fails (here a running entry it ends was written meanwhile), the updates
// of the parts before it are acknowledged, and none of the failed part or
// after it (the engine resends those), however independent.
func TestChainedBatchAcknowledgesTheAppliedParts(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.01, 16)
	const shards = maxBatch + 40
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.CPUCount, j.MemoryMB = shards, 0.01, 1 })
	r.trigger("job")
	r.offer("o1", 64, 65536)
	r.sched.launcher.round(r.ctx)
	running := r.running("job")
	if len(running) != shards {
		t.Fatalf("%d of %d shards running", len(running), shards)
	}
	late := shards - 10       // in the second part
	r.drv.killHook = func() { // another writer changes the late shard's entry after it was staged
		n, err := r.kv.Get(r.ctx, registry.RunningPath+"/job/"+jobs.MetaKey("job", late))
		if err != nil {
			t.Error(err)
			return
		}
		if err := r.kv.Commit(r.ctx, store.Set(n.Path, n.Value, n.Version)); err != nil {
			t.Error(err)
		}
	}
	acked := map[int]bool{}
	for item := range shards {
		r.sched.updates = append(r.sched.updates, pendingUpdate{
			st:   engine.Status{TaskID: running[item].TaskID, AgentID: "agent-1", State: "TASK_FINISHED"},
			done: func(ok bool) { acked[item] = ok },
		})
	}
	r.sched.updates = append(r.sched.updates, pendingUpdate{ // an unknown live task: killed, which runs the hook
		st:   engine.Status{TaskID: "job@-@0@-@READY@-@agent-1@-@orphan", AgentID: "agent-1", State: "TASK_RUNNING"},
		done: func(bool) {},
	})
	r.sched.handleUpdates(r.ctx)
	for item := range shards {
		if want := item < maxBatch; acked[item] != want {
			t.Fatalf("shard %d acknowledged %v, want %v (the first part only)", item, acked[item], want)
		}
	}
	left := r.running("job")
	if len(left) != shards-maxBatch {
		t.Fatalf("%d entries left, want the %d of the failed part", len(left), shards-maxBatch)
	}
	if _, ok := left[maxBatch]; !ok {
		t.Fatalf("shard %d, of the failed part, was ended", maxBatch)
	}
}

// TestUpdatesThatWriteNothingAreAcknowledged: a turn's updates are committed maxBatch
// at a time as the parts of one chain; the updates after the last cut that write nothing
// (an ended task's update resent, one of a task the registry does not know) make no part
// of it, and were left unacknowledged: the engine resent them again and again (the
// simulated master held thousands unacknowledged at a window's end, and a takeover's
// new leader got them all). Every update handled is acknowledged once the chain applied.
func TestUpdatesThatWriteNothingAreAcknowledged(t *testing.T) {
	for _, n := range []int{1, maxBatch, maxBatch + 1, 3*maxBatch + 7} {
		r := newRig(t)
		acked, refused := 0, 0
		for range n {
			r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_FINISHED"}, func(ok bool) {
				if ok {
					acked++
				} else {
					refused++
				}
			})
		}
		r.sched.handleUpdates(r.ctx)
		if acked != n || refused != 0 {
			t.Fatalf("%d updates writing nothing: %d acknowledged, %d not", n, acked, refused)
		}
	}
}

// batchSizes records the status batches' sizes (observe.StatusBatches).
type batchSizes struct {
	nopGauges
	sizes []int
}

func (b *batchSizes) StatusBatch(updates int, _ time.Duration) { b.sizes = append(b.sizes, updates) }

// TestOffersCutNoStatusBatch: offer events between status updates are held in the same
// turn without committing the updates before them, so the turn's updates are one batch
// (one commit, one sync of the history); another event still commits those before it.
func TestOffersCutNoStatusBatch(t *testing.T) {
	r := newRig(t)
	g := &batchSizes{}
	r.rebuild(func(d *Deps) { d.Gauges = g })
	queue := func(n int) {
		for range n {
			r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "not-ours", State: "TASK_RUNNING"}, func(bool) {})
		}
	}
	queue(10)
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o1", AgentID: "a1", CPUs: 1, MemMB: 128}})
	queue(10)
	r.sched.Rescinded(r.ctx, "o0")
	queue(5)
	r.sched.fromStream(r.ctx, func(context.Context) {})
	queue(3)
	r.sched.handleUpdates(r.ctx)
	if !slices.Equal(g.sizes, []int{25, 3}) {
		t.Fatalf("status batches %v, want [25 3]: offers cut none, another event cuts one", g.sizes)
	}
	if _, ok := r.sched.st.offers["o1"]; !ok {
		t.Fatal("the offer was not held")
	}
}
