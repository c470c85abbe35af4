package scheduler

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// TestTakeoverAfterALaunchTheMasterNeverSaw: a leader committed a 2-shard launch and died
// before its ACCEPT reached the master. The next leader (a new process on the same
// registry) reconciles, the master answers TASK_GONE for both, and the first offers then
// launch the two shards again and another job's waiting execution: nothing stays behind.
// (Two failover shards of one job in one round were each launched twice, so every launch
// commit of the round conflicted and nothing launched again: e2e/ha caught it once.)
func TestTakeoverAfterALaunchTheMasterNeverSaw(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.Failover = "ex", 2, 0.1, true })
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "gap", 1, 0.1 })
	r.trigger("ex")
	dying, die := context.WithCancel(r.ctx)
	r.drv.acceptErr, r.drv.acceptHook = context.Canceled, die
	r.offer("o1", 4, 8192)
	r.sched.launcher.round(dying) // committed as STAGING; the ACCEPT is lost with its leader
	ctx := r.ctx
	if run := r.running("ex"); len(run) != 2 {
		t.Fatalf("running = %+v, want the 2 shards committed", run)
	}
	// The next leader: a scheduler anew on the same registry, subscribed.
	r.rebuild(func(*Deps) {})
	r.drv.acceptErr, r.drv.acceptHook = nil, nil
	r.sched.st.subscribed = false
	r.sched.recon.subscribed(ctx, "fw-1")
	r.trigger("gap")
	r.trigger("ex") // a fire while the shards are accounted for
	for _, rt := range r.running("ex") {
		if err := r.sched.status.handle(ctx, r.reg, engine.Status{TaskID: rt.TaskID, AgentID: "agent-1", State: "TASK_GONE",
			Reason: task.ReasonReconciliation, Source: "SOURCE_MASTER", Message: "Reconciliation: Task is unknown"}); err != nil {
			t.Fatal(err)
		}
	}
	r.offer("o2", 4, 8192)
	r.sched.launcher.round(ctx)
	launched := map[string]int{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			tid, err := jobs.ParseTaskID(l.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			launched[tid.JobName]++
		}
	}
	if launched["ex"] != 2 || launched["gap"] != 1 {
		t.Fatalf("launched %v after the takeover, want ex's 2 shards and gap's; waiting: %+v", launched, r.waiting())
	}
}

// TestReconciliationHoldsOnlyTheJobsItConfirms: while a new term waits for the engine to
// confirm the tasks recorded as running, its first round launches the work of jobs with
// nothing recorded as running at once (before any answer: a takeover's launch does not wait
// for thousands of answers); the next fire of a job whose task is not confirmed yet waits
// for the answer (it could be a second execution of the job at once), then for the
// execution's end, and launches after it: nothing of that job ran twice at once.
func TestReconciliationHoldsOnlyTheJobsItConfirms(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "long", 1, 0.1 })
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "next", 1, 0.1 })
	r.trigger("long")
	r.offer("o1", 4, 8192)
	r.sched.launcher.round(r.ctx)
	running := r.running("long")
	if len(running) != 1 {
		t.Fatalf("running = %+v, want long's shard", running)
	}
	// The next leader: long's task is recorded as running, not confirmed.
	r.rebuild(func(*Deps) {})
	r.sched.st.subscribed = false
	r.sched.recon.subscribed(r.ctx, "fw-1")
	if len(r.sched.st.awaiting) != 1 {
		t.Fatalf("awaiting %v, want long's task", r.sched.st.awaiting)
	}
	r.trigger("next")
	r.trigger("long") // its next fire, while its task is unconfirmed
	r.offer("o2", 4, 8192)
	accepts := len(r.drv.accepts)
	if r.sched.Launched() {
		t.Fatal("the new term says it launched before its first round")
	}
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != accepts+1 || len(r.running("next")) != 1 {
		t.Fatalf("accepts %d, next running %v: want next launched before the answer", len(r.drv.accepts)-accepts, r.running("next"))
	}
	if !r.sched.Launched() { // the takeover is over (the etcd shape then hands the raft leadership on)
		t.Fatal("the term launched and does not say so")
	}
	r.clk.Advance(waitRecordAfter) // reasons are recorded for work waiting this long
	r.sched.launcher.round(r.ctx)
	if w := r.waiting()["ready/long"]; w.Reason != queue.WaitReconciling {
		t.Fatalf("long's fire: %+v, want %s", w, queue.WaitReconciling)
	}
	if run := r.running("long"); len(run) != 1 || run[0].TaskID != running[0].TaskID {
		t.Fatalf("long running %+v, want its one task of the last term", run)
	}
	// The answer: long's task runs. Its fire now waits for the execution's end.
	for _, e := range running {
		if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: e.TaskID, AgentID: "agent-1", State: "TASK_RUNNING",
			Reason: task.ReasonReconciliation, Source: "SOURCE_MASTER"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.sched.st.awaiting) != 0 || !r.sched.st.roundNow {
		t.Fatalf("after the answer: awaiting %v, roundNow %v", r.sched.st.awaiting, r.sched.st.roundNow)
	}
	r.offer("o3", 4, 8192)
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(waitRecordEvery)
	r.sched.launcher.round(r.ctx)
	if w := r.waiting()["ready/long"]; w.Reason != queue.WaitRunning {
		t.Fatalf("long's fire after the answer: %+v, want %s", w, queue.WaitRunning)
	}
	// The execution ends: the fire launches.
	for _, e := range running {
		if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: e.TaskID, AgentID: "agent-1", State: "TASK_FINISHED"}); err != nil {
			t.Fatal(err)
		}
	}
	r.offer("o4", 4, 8192)
	r.sched.launcher.round(r.ctx)
	if run := r.running("long"); len(run) != 1 || !run[0].LaunchedAt.After(running[0].LaunchedAt) {
		t.Fatalf("long running %+v, want its next execution", run)
	}
}

// TestSubscriptionRevivesOnceForWaitingWork: a new subscription may inherit the last
// term's SUPPRESS and decline filters, which the new term knows nothing of; it REVIVEs
// (once), rather than waiting for offers they hold back.
func TestSubscriptionRevivesOnceForWaitingWork(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "j", 1, 0.1 })
	r.trigger("j")
	r.sched.st.subscribed = false
	r.sched.recon.subscribed(r.ctx, "fw-1")
	r.sched.launcher.round(r.ctx)
	r.sched.launcher.round(r.ctx)
	if r.drv.revive != 1 {
		t.Fatalf("revives %d with work waiting after the subscription, want 1", r.drv.revive)
	}
	r.offer("o1", 4, 8192)
	r.sched.launcher.round(r.ctx)
	if len(r.running("j")) != 1 {
		t.Fatalf("j running %v, want it launched on the offer", r.running("j"))
	}
}

// TestTakeoversFirstTurnLaunchesBeforeTheBacklog: at a takeover the engine's stream
// brings the subscription, then every update the old leader left unacknowledged (more
// than backlogHold here), the offers, then the reconciliation's answers. The loop's turn
// that handles the subscription goes on to a launch round with those offers, before it
// handles any of the updates queued behind it, though the last round's spacing still runs
// and the backlog would hold a later round: the work of a job with nothing recorded as
// running launches; the old leader's job, its tasks answered but not handled, waits. (A
// turn took updatesPerTurn updates first, and the offers behind them only in a later
// turn: the first launch at 100,000 jobs on etcd came only after the last answer.)
func TestTakeoversFirstTurnLaunchesBeforeTheBacklog(t *testing.T) {
	r, running := rigAfterAPreviousLeader(t)
	r.rebuild(func(*Deps) {}) // the next leader, on the same registry
	r.sched.st.subscribed = false
	r.trigger("new")
	r.trigger("old") // its next execution: waits for the recorded one
	var acked, ackedBeforeLaunch int
	done := func(ok bool) {
		if !ok {
			t.Error("an update not handled")
		}
		acked++
		if len(r.drv.accepts) == 0 {
			ackedBeforeLaunch++
		}
	}
	r.sched.Subscribed(r.ctx, "fw-1")
	const resent = backlogHold + 1
	for range resent {
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: "foreign-task", State: "TASK_FINISHED"}, done)
	}
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o2", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	for _, e := range running {
		r.sched.UpdateAsync(r.ctx, engine.Status{TaskID: e.TaskID, AgentID: "agent-1", State: "TASK_RUNNING",
			Reason: task.ReasonReconciliation, Source: "SOURCE_MASTER"}, done)
	}
	if !r.sched.backlogged() {
		t.Fatal("no backlog: the test needs one")
	}
	ts := turnState{throttle: make(chan time.Time)} // the last round's spacing, not over
	r.sched.turn(r.ctx, &ts, true)
	if len(r.drv.reconciles) == 0 {
		t.Fatal("the subscription's turn asked nothing")
	}
	if len(r.drv.accepts) != 1 || ackedBeforeLaunch != 0 {
		t.Fatalf("after the subscription's turn: %d ACCEPTs, %d updates handled before the first, want 1 and none",
			len(r.drv.accepts), ackedBeforeLaunch)
	}
	for _, l := range r.drv.accepts[0].launches {
		if tid, _ := jobs.ParseTaskID(l.TaskID); tid.JobName != "new" {
			t.Fatalf("launched %s, want only new's (old's recorded tasks not handled yet)", l.TaskID)
		}
	}
	if r.sched.st.firstLaunch {
		t.Fatal("still in the term's first launch after a round launched")
	}
	for turns := 0; len(r.sched.inbox) > 0; turns++ {
		if turns > resent/updatesPerTurn+2 {
			t.Fatalf("%d turns, %d updates still queued", turns, r.sched.inboxUpdates)
		}
		r.sched.turn(r.ctx, &ts, true)
	}
	if len(r.sched.st.awaiting) != 0 {
		t.Fatalf("awaiting %v after the answers", r.sched.st.awaiting)
	}
	if acked != resent+len(running) {
		t.Fatalf("%d updates handled, want %d", acked, resent+len(running))
	}
	if got := r.running("old"); len(got) != len(running) {
		t.Fatalf("old running %+v, want its recorded tasks (answered running)", got)
	}
}

// TestRoundsWaitForTheTermsSubscription: a term's launch rounds wait for its first
// subscription to the engine (at most subscribeWait; the alarm is set for it), then for
// the subscription's first offers (at most offersWait): a round before them launches
// nothing, and at a takeover it held the loop when the subscription, then the offers,
// came. The offers' turn launches; past the bounds, or after a later disconnection,
// rounds run as before (and say why the work waits).
func TestRoundsWaitForTheTermsSubscription(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "j", 1, 0.1 })
	r.trigger("j")
	r.sched.st.subscribed = false // a new term, not subscribed yet
	ts := turnState{since: r.clk.Now()}
	r.sched.turn(r.ctx, &ts, true)
	if !ts.pending {
		t.Fatal("a round ran before the term's subscription")
	}
	if want := ts.since.Add(subscribeWait); !r.sched.alarm.at.Equal(want) {
		t.Fatalf("alarm at %v, want the bound %v", r.sched.alarm.at, want)
	}
	r.sched.Subscribed(r.ctx, "fw-1")
	r.sched.turn(r.ctx, &ts, true)
	if !ts.pending || r.drv.revive != 1 {
		t.Fatalf("after the subscription, no offer yet: round due %v (want held), %d REVIVEs (want 1)", ts.pending, r.drv.revive)
	}
	if want := r.clk.Now().Add(offersWait); !r.sched.alarm.at.Equal(want) {
		t.Fatalf("alarm at %v, want the offers' bound %v", r.sched.alarm.at, want)
	}
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	r.sched.turn(r.ctx, &ts, false)
	if ts.pending || len(r.drv.accepts) != 1 || len(r.running("j")) != 1 {
		t.Fatalf("after the subscription: round due %v, %d ACCEPTs, j running %v: want j launched", ts.pending, len(r.drv.accepts), r.running("j"))
	}
	r.sched.Disconnected(r.ctx, context.Canceled) // later: rounds run unsubscribed
	ts.throttle = nil                             // (the last round's spacing, on the wall clock, is over)
	r.sched.turn(r.ctx, &ts, true)
	if ts.pending {
		t.Fatal("a round held after the term's subscription ended")
	}

	r = newRig(t) // no subscription within the bound
	r.sched.st.subscribed = false
	ts = turnState{since: r.clk.Now()}
	r.sched.turn(r.ctx, &ts, true)
	r.clk.Advance(subscribeWait)
	r.sched.turn(r.ctx, &ts, false)
	if ts.pending {
		t.Fatal("rounds still held past subscribeWait")
	}
	r.sched.Subscribed(r.ctx, "fw-1") // no offer within the bound
	ts.throttle = nil
	r.sched.turn(r.ctx, &ts, true)
	r.clk.Advance(offersWait)
	r.sched.turn(r.ctx, &ts, false)
	if ts.pending {
		t.Fatal("rounds still held past offersWait")
	}
}

// TestSubscriptionReconcilesOffTheLoop: the subscription's reconciliation calls (every
// recorded task explicitly, then every task the engine knows) are made off the loop, so
// the engine's reply to them (it queues thousands of answers first) does not hold the
// turn that leads to the first launch; an explicit one that fails ends the wait for its
// answers, on the loop, as before.
func TestSubscriptionReconcilesOffTheLoop(t *testing.T) {
	r, running := rigAfterAPreviousLeader(t)
	var calls []func()
	r.sched.recon.async = func(f func()) { calls = append(calls, f) }
	r.drv.reconciles = nil
	r.sched.st.subscribed = false
	r.sched.Subscribed(r.ctx, "fw-1")
	r.sched.turn(r.ctx, &turnState{}, true)
	if len(r.drv.reconciles) != 0 || len(calls) != 2 || len(r.sched.st.awaiting) != len(running) {
		t.Fatalf("after the subscription's turn: %d reconciliations made on the loop, %d off it, awaiting %v; want 0, 2 and the running tasks",
			len(r.drv.reconciles), len(calls), r.sched.st.awaiting)
	}
	r.drv.reconErr = errors.New("master unreachable")
	for _, f := range calls {
		f()
	}
	if n := len(r.drv.reconciles); n != 2 || len(r.drv.reconciles[0]) != len(running) || len(r.drv.reconciles[1]) != 0 {
		t.Fatalf("reconciliations %v, want the running tasks, then every task (implicit)", r.drv.reconciles)
	}
	r.sched.drain(r.ctx)
	if r.sched.st.awaiting != nil {
		t.Fatalf("awaiting %v after the explicit reconciliation failed, want launching not held", r.sched.st.awaiting)
	}
}

// TestATakeoversFirstRoundWaitsForTheCatchUp: the last leader staged a misfire=false
// job's fire (a ready entry held until its instant) and died; the new term's catch-up
// finds the fires missed after it. Its launch rounds wait for the catch-up's commit, so
// the missed fires collapse into the staged execution and the job runs once for the
// gap. Launched first, the staged entry left the catch-up nothing pending to collapse
// into, and a second execution was queued for the same gap (the ten-kill test, once the
// term's first round came 31 ms after it began).
func TestATakeoversFirstRoundWaitsForTheCatchUp(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.ShardingTotalCount, j.CPUCount, j.Cron, j.Misfire = "gap", 1, 0.1, "* * * * * ?", false
	})
	staged := r.clk.Now().Add(time.Second).Truncate(time.Second)
	if _, err := r.reg.Work().TriggerFires(r.ctx, map[string]registry.CronFire{"gap": {At: staged, Instant: staged}}, staged, nil); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(staged.Sub(r.clk.Now()) + 2500*time.Millisecond) // the old leader died; two fires pass

	r.sched.st.catchingUp = true // as the term's Run sets it before starting the producer
	r.sched.Subscribed(r.ctx, "fw-2")
	r.sched.Offers(r.ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	ts := turnState{since: r.clk.Now()}
	r.sched.turn(r.ctx, &ts, true)
	if !ts.pending || len(r.drv.accepts) != 0 {
		t.Fatalf("before the catch-up: round due %v (want held), %d ACCEPTs (want none)", ts.pending, len(r.drv.accepts))
	}
	if want := ts.since.Add(subscribeWait); !r.sched.alarm.at.Equal(want) {
		t.Fatalf("alarm at %v, want the bound %v", r.sched.alarm.at, want)
	}

	r.sched.producer.catchUp(r.ctx)
	r.sched.producer.events().CaughtUp(r.ctx)
	r.sched.turn(r.ctx, &ts, false)
	if got := r.running("gap"); len(got) != 1 {
		t.Fatalf("after the catch-up: gap running %v, want its one execution", got)
	}
	if n := r.readyCount("gap"); n != 0 {
		t.Fatalf("%d more executions queued for the same gap, want the missed fires collapsed into the staged one", n)
	}

	r = newRig(t) // a catch-up that does not commit within the bound holds nothing past it
	r.sched.st.catchingUp = true
	ts = turnState{since: r.clk.Now()}
	r.sched.turn(r.ctx, &ts, true)
	r.clk.Advance(subscribeWait)
	r.sched.turn(r.ctx, &ts, false)
	if ts.pending {
		t.Fatal("rounds still held past the catch-up's bound")
	}
}

// TestACountedCatchUpHoldsOnlyItsJobs: once the producer's catch-up has
// counted the jobs it queues missed fires for (Events.Counted), the
// term's rounds launch every other job's work; those jobs' entries wait
// (staged) until it has committed, and then launch once, the missed fires
// collapsed into the staged execution.
func TestACountedCatchUpHoldsOnlyItsJobs(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.ShardingTotalCount, j.CPUCount, j.Cron, j.Misfire = "gap", 1, 0.1, "* * * * * ?", false
	})
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.ShardingTotalCount, j.CPUCount, j.Cron = "other", 1, 0.1, "0 0 0 * * ?"
	})
	staged := r.clk.Now().Add(time.Second).Truncate(time.Second)
	if _, err := r.reg.Work().TriggerFires(r.ctx, map[string]registry.CronFire{"gap": {At: staged, Instant: staged}}, staged, nil); err != nil {
		t.Fatal(err)
	}
	r.trigger("other")
	r.clk.Advance(staged.Sub(r.clk.Now()) + 2500*time.Millisecond) // the old leader died; two fires of gap pass

	s := r.sched
	s.st.catchingUp, s.st.catchUpUntil = true, r.clk.Now().Add(subscribeWait) // as the term's Run sets them
	s.Subscribed(r.ctx, "fw-2")
	s.Offers(r.ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}})
	ts := turnState{since: r.clk.Now()}
	s.turn(r.ctx, &ts, true)
	if len(r.drv.accepts) != 0 {
		t.Fatal("a round launched before the catch-up had counted its jobs")
	}

	_, plan, err := s.producer.planCatchUp(r.ctx) // counted, not committed yet
	if err != nil || plan == nil || len(plan.missed) != 1 {
		t.Fatalf("the catch-up's count: %v, %+v; want gap's missed fires", err, plan)
	}
	s.producer.events().Counted(r.ctx, []string{"gap"}) // as catchUpOnce tells it
	s.turn(r.ctx, &ts, true)
	if len(r.running("other")) != 1 || len(r.running("gap")) != 0 {
		t.Fatalf("counted, not committed: other running %v, gap running %v; want other launched, gap waiting", r.running("other"), r.running("gap"))
	}
	if w, ok := s.launcher.scratch[queue.WaitKey(false, "gap", 0)]; !ok || w.Reason != queue.WaitStaged {
		t.Fatalf("gap waits with %+v, want staged for the catch-up", w)
	}

	if _, err := s.producer.catchUpOnce(r.ctx, &plan); err != nil {
		t.Fatal(err)
	}
	s.producer.events().CaughtUp(r.ctx)
	s.Offers(r.ctx, []engine.Offer{{ID: "o2", AgentID: "agent-1", Hostname: "host-1", CPUs: 4, MemMB: 1024}}) // o1 went whole to other's ACCEPT
	ts.throttle = nil                                                                                         // (the last round's spacing, on the wall clock, is over)
	s.turn(r.ctx, &ts, true)
	if got := r.running("gap"); len(got) != 1 {
		t.Fatalf("after the catch-up: gap running %v, want its one execution", got)
	}
	if n := r.readyCount("gap"); n != 0 {
		t.Fatalf("%d more executions of gap queued for the same gap, want the missed fires collapsed into the staged one", n)
	}

	// The hook's wiring: a catch-up counts, tells, then commits.
	r2 := newRig(t)
	r2.addApp("app", 0.1, 32)
	r2.addJob(func(j *jobs.Config) { j.JobName, j.Cron = "every", "* * * * * ?" })
	if err := r2.reg.Work().TriggerMany(r2.ctx, map[string]bool{}, t0.Add(-2*time.Second), t0.Add(-2*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	var told []string
	r2.sched.producer.Events = &testEvents{counted: func(_ context.Context, jobs []string) { told = jobs }}
	r2.sched.producer.catchUp(r2.ctx)
	if !slices.Equal(told, []string{"every"}) {
		t.Fatalf("the catch-up told %v, want [every]", told)
	}
}
