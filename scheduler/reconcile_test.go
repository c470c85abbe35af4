package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// launchedJobs counts the shards each job's ACCEPTs launched.
func launchedJobs(t *testing.T, r *rig) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			tid, err := jobs.ParseTaskID(l.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			out[tid.JobName]++
		}
	}
	return out
}

// TestLaunchWaitsForReconciliation: after (re)subscribing, nothing of a
// job with tasks the registry holds as running is launched until the
// engine has answered for every such task — or the wait has passed; a job
// with nothing recorded as running launches at once.
func TestLaunchWaitsForReconciliation(t *testing.T) {
	r, running := rigAfterAPreviousLeader(t)

	r.sched.recon.begin(r.ctx) // the new subscription
	if n := len(r.drv.reconciles); n != 1 || len(r.drv.reconciles[0]) != 2 {
		t.Fatalf("explicit reconcile of the running tasks: %+v", r.drv.reconciles)
	}
	r.trigger("new")
	r.trigger("old") // its next execution: waits for the answers, then for the running one
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if got := launchedJobs(t, r); got["new"] == 0 || got["old"] != 0 {
		t.Fatalf("launched %v before the answers, want new's shards alone", got)
	}
	r.status(running[0].TaskID, "TASK_FINISHED")
	r.status(running[1].TaskID, "TASK_RUNNING")
	r.offer("o3", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if got := launchedJobs(t, r); got["old"] != 0 || len(r.running("old")) != 1 {
		t.Fatalf("after the answers: launched %v, running old %+v, want old's one running shard alone", got, r.running("old"))
	}
	r.status(running[1].TaskID, "TASK_FINISHED")
	r.offer("o4", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if got := launchedJobs(t, r); got["old"] != 2 {
		t.Fatalf("after old's execution ended: launched %v, want its next execution", got)
	}
}

// TestReconciliationWaitIsBounded: a task the engine never answers for
// holds its job's next execution back for ReconcileWait at most (it stays
// recorded as running, as the launch of a job's next execution waits for
// it), and nothing else's.
func TestReconciliationWaitIsBounded(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "old"; j.ShardingTotalCount = 1 })
	r.addJob(func(j *jobs.Config) { j.JobName = "new" })
	r.trigger("old")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	r.drv.accepts = nil
	r.sched.recon.begin(r.ctx)
	r.trigger("new")
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if got := launchedJobs(t, r); got["new"] == 0 {
		t.Fatalf("launched %v while waiting, want new's shards", got)
	}
	if r.sched.alarm.at.IsZero() || r.sched.alarm.at.After(r.sched.st.awaitUntil) {
		t.Fatalf("alarm at %v, want a wake-up by the wait's end %v", r.sched.alarm.at, r.sched.st.awaitUntil)
	}
	r.clk.Advance(r.sched.deps.Options.ReconcileWait + time.Millisecond)
	r.sched.launcher.round(r.ctx)
	if len(r.sched.st.awaiting) != 0 {
		t.Fatal("still waiting after the bound")
	}
	if len(r.running("old")) != 1 {
		t.Fatal("the unanswered task was dropped")
	}
}

// TestPeriodicReconcileKeepsItsInterval: the loop's chores tick at least
// once a minute, but the explicit reconciliation runs once per
// Options.Reconcile, counted from the subscription's own.
func TestPeriodicReconcileKeepsItsInterval(t *testing.T) {
	r, _ := launched(t, nil)
	r.sched.deps.Options.Reconcile = 10 * time.Minute
	r.sched.recon.begin(r.ctx)
	r.drv.reconciles = nil
	for minute := 1; minute <= 25; minute++ {
		r.clk.Advance(time.Minute)
		r.sched.recon.periodic(r.ctx)
	}
	if n := len(r.drv.reconciles); n != 2 {
		t.Fatalf("25 minutes at a 10 minute interval: %d reconciliations, want 2", n)
	}
}

// TestQueuedAnswersEndReconciliationBeforeTheyAreHandled: at a takeover
// the engine answers for every running task at once; the answers count as
// they arrive, and while the term has not launched, a turn with offers
// held handles none of the updates before its round (not the whole
// backlog, not one batch of it). Work of a job
// whose answer is not handled yet waits (the registry still holds its task
// as running), so nothing the old term launched is launched again.
func TestQueuedAnswersEndReconciliationBeforeTheyAreHandled(t *testing.T) {
	r, running := rigAfterAPreviousLeader(t)
	r.sched.recon.begin(r.ctx) // the new subscription
	r.trigger("new")
	r.trigger("old") // its next execution: must wait for the running one
	r.offer("o2", 4, 1024)
	var acked int
	for range maxBatch + 10 { // the backlog ahead of the answers
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_RUNNING"}, func(bool) { acked++ })
	}
	r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: running[0].TaskID, State: "TASK_RUNNING"}, func(bool) { acked++ })
	r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: running[1].TaskID, State: "TASK_LOST"}, func(bool) { acked++ })
	r.sched.handleUpdates(r.ctx)
	if acked != 0 {
		t.Fatalf("the term's first turn, offers held, handled %d updates before its round, want none", acked)
	}
	if len(r.sched.st.awaiting) != 0 {
		t.Fatalf("queued answers not counted: %d awaited", len(r.sched.st.awaiting))
	}
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts %d, want the first round to launch", len(r.drv.accepts))
	}
	for _, l := range r.drv.accepts[0].launches {
		if tid, _ := jobs.ParseTaskID(l.TaskID); tid.JobName != "new" {
			t.Fatalf("launched %s while its running task's answer was not handled", l.TaskID)
		}
	}
	if r.sched.st.firstLaunch {
		t.Fatal("still in the term's first launch after a round launched")
	}
	for r.sched.inboxUpdates > 0 {
		r.sched.handleUpdates(r.ctx)
	}
	if acked != maxBatch+12 {
		t.Fatalf("handled %d updates, want %d", acked, maxBatch+12)
	}
	if got := r.running("old"); len(got) != 1 || got[0].TaskID != running[0].TaskID {
		t.Fatalf("after the answers: running old %+v, want its lost shard gone", got)
	}
}

// TestOffersPassTheBacklogInATermsFirstTurns: until the term's first round
// that can launch, offers queued behind status updates left for later
// turns are handled in this turn (the launch round needs them), before any
// of those updates, but never ahead of the stream's other events; with no
// offer to take, a turn takes one batch of updates.
func TestOffersPassTheBacklogInATermsFirstTurns(t *testing.T) {
	r := newRig(t)
	r.sched.st.firstLaunch = true
	for range maxBatch + 10 {
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_RUNNING"}, func(bool) {})
	}
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	r.sched.Rescinded(r.ctx, "o1")
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o2", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	failed := false
	r.sched.Failure(r.ctx, "agent-2", "", nil)
	r.sched.fromStream(r.ctx, func(context.Context) { failed = true })
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o3", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	r.sched.handleUpdates(r.ctx)
	if _, ok := r.sched.st.offers["o2"]; !ok || len(r.sched.st.offers) != 1 || failed {
		t.Fatalf("after the first turn: offers %v (want o2 only: o1 rescinded, o3 behind other events), later event handled %v",
			r.sched.st.offers, failed)
	}
	if r.sched.inboxUpdates != maxBatch+10 {
		t.Fatalf("%d updates left, want all %d (the offers first)", r.sched.inboxUpdates, maxBatch+10)
	}
	r.sched.st.subscribed = false // no offer to take now: one batch of updates
	r.sched.handleUpdates(r.ctx)
	if r.sched.inboxUpdates != 10 || failed {
		t.Fatalf("%d updates left, want 10; the later event handled %v", r.sched.inboxUpdates, failed)
	}
	for len(r.sched.inbox) > 0 {
		r.sched.handleUpdates(r.ctx)
	}
	if _, ok := r.sched.st.offers["o3"]; !ok || !failed {
		t.Fatalf("the rest not handled in order: offers %v, event %v", r.sched.st.offers, failed)
	}
}

// TestTermsFirstLaunchIsOneCommit: the term's first round that can launch
// places one commit's worth (its ACCEPTs are not behind a chain of
// commits); the next round places a whole round's worth again.
func TestTermsFirstLaunchIsOneCommit(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks, r.sched.deps.Options.MaxCommitTasks = 100, 2
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "a"; j.ShardingTotalCount = 2 })
	r.addJob(func(j *jobs.Config) { j.JobName = "b"; j.ShardingTotalCount = 2 })
	r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.ShardingTotalCount = 2 })
	r.sched.st.firstLaunch = true
	r.trigger("a")
	r.trigger("b")
	r.trigger("c")
	r.offer("o1", 16, 4096)
	r.sched.launcher.round(r.ctx)
	launched := func() int {
		n := 0
		for _, a := range r.drv.accepts {
			n += len(a.launches)
		}
		return n
	}
	if n := launched(); n != 2 {
		t.Fatalf("the term's first round launched %d tasks, want one commit's worth (2)", n)
	}
	r.offer("o2", 16, 4096)
	r.sched.launcher.round(r.ctx)
	if n := launched(); n != 6 {
		t.Fatalf("after the second round %d tasks launched, want all 6", n)
	}
}

// rigAfterAPreviousLeader is a rig with jobs "old" (2 shards) and "new" where a previous
// leader launched "old": its two running tasks are returned, and no ACCEPT is recorded yet.
func rigAfterAPreviousLeader(t *testing.T) (*rig, map[int]task.Entry) {
	t.Helper()
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "old"; j.ShardingTotalCount = 2 })
	r.addJob(func(j *jobs.Config) { j.JobName = "new" })
	r.trigger("old")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	running := r.running("old")
	if len(running) != 2 {
		t.Fatalf("running %+v", running)
	}
	r.drv.accepts = nil
	return r, running
}

// A master that failed over drops the question for the tasks of an agent
// that has not registered again yet: the tasks not answered are asked for
// again after 1 s, then 2 s, 4 s (at most), while launching waits for
// them, so the answer comes soon after the agent is back (real Mesos 1.11
// soak: fires 10-21 s late after each master restart, launching held for
// the whole ReconcileWait).
func TestReconciliationAsksAgainForTheUnanswered(t *testing.T) {
	r, running := rigAfterAPreviousLeader(t)
	r.sched.deps.Options.ReconcileWait = 15 * time.Second
	r.sched.recon.begin(r.ctx)
	r.status(running[0].TaskID, "TASK_RUNNING")
	asked := func() []string {
		var out []string
		for _, refs := range r.drv.reconciles[1:] {
			for _, ref := range refs {
				out = append(out, ref.TaskID)
			}
		}
		return out
	}
	r.sched.recon.again(r.ctx)
	if got := asked(); len(got) != 0 {
		t.Fatalf("asked again at once: %v", got)
	}
	for _, step := range []struct {
		advance time.Duration
		asks    int
	}{{time.Second, 1}, {time.Second, 1}, {time.Second, 2}, {3 * time.Second, 2}, {time.Second, 3}, {4 * time.Second, 4}} {
		r.clk.Advance(step.advance)
		r.sched.recon.again(r.ctx)
		if got := asked(); len(got) != step.asks || got[len(got)-1] != running[1].TaskID {
			t.Fatalf("after %v more: asked again for %v, want %d asks for %s only", step.advance, got, step.asks, running[1].TaskID)
		}
	}
	r.status(running[1].TaskID, "TASK_RUNNING")
	r.clk.Advance(4 * time.Second)
	r.sched.recon.again(r.ctx)
	if got := asked(); len(got) != 4 {
		t.Fatalf("asked again after every task answered: %v", got)
	}
}

// Past the wait, launching goes on and nothing is asked again.
func TestReconciliationAsksNoMoreAfterTheWait(t *testing.T) {
	r, _ := rigAfterAPreviousLeader(t)
	r.sched.deps.Options.ReconcileWait = 3 * time.Second
	r.sched.recon.begin(r.ctx)
	r.clk.Advance(3 * time.Second)
	r.sched.recon.again(r.ctx)
	if n := len(r.drv.reconciles); n != 1 {
		t.Fatalf("%d reconciliations, want the first only", n)
	}
}
