package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

func TestLaunchPlacesWholeGangAndRecordsState(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingItemParameters = "0=Beijing,2=Guangzhou"; j.JobParameter = "p" })
	r.trigger("job")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)

	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %d, want 1", len(r.drv.accepts))
	}
	acc := r.drv.accepts[0]
	if len(acc.launches) != 3 || len(acc.offers) != 1 || acc.offers[0] != "o1" {
		t.Fatalf("accept = %+v", acc)
	}
	items := map[int]jobs.TaskData{}
	for _, l := range acc.launches {
		d, err := l.Task, l.Task.Check()
		if err != nil {
			t.Fatal(err)
		}
		if d.ShardingContext.TaskID != l.TaskID || l.Executor.ID != "app@-@agent-1" || l.Executor.Command != "/bin/executor" {
			t.Fatalf("launch %+v data %+v", l, d)
		}
		if l.CPUs != 0.5 || l.MemMB != 64 || l.Executor.CPUs != 1 {
			t.Fatalf("resources of %+v", l)
		}
		tid, err := jobs.ParseTaskID(l.TaskID)
		if err != nil || tid.Kind != jobs.KindReady || tid.AgentID != "" { // a fire's id names no agent
			t.Fatalf("task id %q: %+v %v", l.TaskID, tid, err)
		}
		items[d.ShardingContext.ShardingItem] = d
	}
	if items[0].ShardingContext.ShardingParameter != "Beijing" || items[1].ShardingContext.ShardingParameter != "" ||
		items[2].ShardingContext.ShardingParameter != "Guangzhou" || items[0].ShardingContext.JobParameter != "p" {
		t.Fatalf("sharding contexts: %+v", items)
	}
	if items[0].ExecutionSource != jobs.SourceNormal || items[0].ShardingContext.ShardingTotalCount != 3 {
		t.Fatalf("source/total: %+v", items[0])
	}
	run := r.running("job")
	if len(run) != 3 || run[1].State != "TASK_STAGING" || run[1].Hostname != "host-1" {
		t.Fatalf("running = %+v", run)
	}
	if r.readyCount("job") != 0 {
		t.Fatal("ready entry not dequeued")
	}
	if len(r.sched.st.offers) != 0 {
		t.Fatal("accepted offer still held")
	}
}

func TestGangThatDoesNotFitLaunchesNothing(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil) // 3 × 0.5 cpu + 1 cpu executor = 2.5 cpus
	r.agent(4, 4096)
	r.trigger("job")
	r.offer("o1", 2, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatalf("launched a partial gang: %+v", r.drv.accepts)
	}
	if len(r.drv.declines) != 1 || r.drv.declines[0].refuse != r.sched.deps.Options.RefuseBusy {
		t.Fatalf("declines = %+v", r.drv.declines)
	}
	if r.readyCount("job") != 1 || len(r.running("job")) != 0 {
		t.Fatal("queue state changed although nothing launched")
	}
	r.clk.Advance(waitRecordAfter)
	r.offer("o2", 2, 1024)
	r.sched.launcher.round(r.ctx)
	if w := r.waiting()["ready/job"]; w.Reason != queue.WaitReserved {
		t.Fatalf("waiting = %+v, want the gang holding the reservation", w)
	}
}

func TestIdleDeclinesAndSuppressesThenRevivesOnWork(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	r.sched.launcher.round(r.ctx)
	if r.drv.suppress != 1 || len(r.drv.declines) != 1 || r.drv.declines[0].refuse != r.sched.deps.Options.RefuseIdle {
		t.Fatalf("suppress=%d declines=%+v", r.drv.suppress, r.drv.declines)
	}
	r.trigger("job")
	r.sched.launcher.round(r.ctx)
	if r.drv.revive != 1 {
		t.Fatalf("revive = %d, want 1", r.drv.revive)
	}
	if len(r.drv.accepts) != 0 {
		t.Fatal("launched without an offer")
	}
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %d after the revived offer", len(r.drv.accepts))
	}
}

func TestJobNeverRunsTwoExecutionsAtOnce(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	r.trigger("job")
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %d, want 1 while the first execution runs", len(r.drv.accepts))
	}
	if r.readyCount("job") != 1 {
		t.Fatal("the second execution must stay queued")
	}
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_FINISHED")
	}
	r.offer("o3", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 2 {
		t.Fatalf("accepts = %d, want the queued execution launched after the first ended", len(r.drv.accepts))
	}
}

func TestOldestReadyWorkGoesFirst(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	r.addJob(func(j *jobs.Config) { j.JobName = "zzz-old"; j.ShardingTotalCount = 1; j.CPUCount = 1 })
	r.addJob(func(j *jobs.Config) { j.JobName = "aaa-new"; j.ShardingTotalCount = 1; j.CPUCount = 1 })
	r.trigger("zzz-old")
	r.clk.Advance(1)
	r.trigger("aaa-new")
	r.offer("o1", 1.1, 1024) // room for one job only
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.drv.accepts[0].launches) != 1 {
		t.Fatalf("accepts = %+v", r.drv.accepts)
	}
	if tid, _ := jobs.ParseTaskID(r.drv.accepts[0].launches[0].TaskID); tid.JobName != "zzz-old" {
		t.Fatalf("launched %s, want the older zzz-old", tid.JobName)
	}
}

func TestAcceptFailureRollsStateBack(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	r.trigger("job")
	r.drv.acceptErr = errors.New("master gone")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if n := len(r.running("job")); n != 0 {
		t.Fatalf("running = %d after a failed accept", n)
	}
	if r.readyCount("job") != 1 {
		t.Fatal("the execution was lost by a failed accept")
	}
}

// An ACCEPT cut short by the end of the scheduler's context (SIGTERM, a
// lost term) may have reached the master: the task stays STAGING instead of
// being queued again, and the next start's reconciliation settles it: gone
// from the master (it never got it), it runs again at once, exactly once.
func TestInterruptedAcceptLeftToReconciliation(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	var logged bytes.Buffer
	r.sched.launcher.log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx, cancel := context.WithCancel(r.ctx)
	r.drv.acceptErr, r.drv.acceptHook = context.Canceled, cancel
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(ctx)
	if strings.Contains(logged.String(), "level=ERROR") {
		t.Fatalf("a stopping scheduler logged errors:\n%s", logged.String())
	}
	run := r.running("job")
	if len(run) != 1 || run[0].State != "TASK_STAGING" {
		t.Fatalf("running = %+v, want the shard still STAGING", run)
	}
	if n := r.readyCount("job"); n != 0 {
		t.Fatalf("ready = %d: an interrupted accept was queued again (it may have run)", n)
	}
	goneRunsAgain(t, r, run[0].TaskID)
}

// An ACCEPT sent but unanswered (the connection closed under it: a real
// Mesos master killed after it launched the tasks, real-mesos soak seed
// 5503) may have been carried out: the shard stays STAGING, is not queued
// again, and the next round launches nothing beside it; reconciliation
// settles it (gone from the engine: queued again once).
func TestUnansweredAcceptLeftToReconciliation(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.sched.recon.opts.Reconcile, r.sched.st.reconciledAt = 10*time.Minute, r.clk.Now() // the periodic one just ran
	r.drv.acceptErr = fmt.Errorf("ACCEPT: %w: Post \"http://master/api/v1/scheduler\": EOF", engine.ErrOutcomeUnknown)
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) != 1 || run[0].State != "TASK_STAGING" {
		t.Fatalf("running = %+v, want the shard still STAGING", run)
	}
	r.sched.recon.periodic(r.ctx) // the subscription outlived the call: the next tick asks
	if n := len(r.drv.reconciles); n != 1 || len(r.drv.reconciles[0]) != 1 || r.drv.reconciles[0][0].TaskID != run[0].TaskID {
		t.Fatalf("reconciles = %+v, want the unanswered task asked for at the next tick", r.drv.reconciles)
	}
	if n := r.readyCount("job"); n != 0 {
		t.Fatalf("ready = %d: an unanswered accept was queued again (it may have run)", n)
	}
	r.drv.acceptErr = nil
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if n := len(r.drv.accepts); n != 0 {
		t.Fatalf("%d ACCEPTs: the shard was launched again beside the unanswered one", n)
	}
	goneRunsAgain(t, r, run[0].TaskID)
}

// The Kubernetes engine's Accept whose pod creation lost its answer is
// ErrOutcomeUnknown too: the shard stays STAGING and nothing runs beside
// it; when the API server then says the pod is not there, the engine
// tells the task LOST from the master with REASON_TASK_UNKNOWN (not a
// reconciliation's answer), and the shard is queued again once, as never
// started.
func TestUnansweredPodCreationLostAsUnknownRunsAgain(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.drv.acceptErr = fmt.Errorf("kube: create pods: 1 of 1 failed, the outcome of t unknown: %w: Post \"https://kube/api/v1/namespaces/ns/pods\": EOF",
		engine.ErrOutcomeUnknown)
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if len(run) != 1 || run[0].State != "TASK_STAGING" {
		t.Fatalf("running = %+v, want the shard still STAGING", run)
	}
	r.drv.acceptErr = nil
	r.trigger("job") // another execution of the shard waits for it
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if n := len(r.drv.accepts); n != 0 {
		t.Fatalf("%d ACCEPTs: the shard was launched again beside the unanswered one", n)
	}
	err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: "TASK_LOST",
		Reason: task.ReasonTaskUnknown, Source: task.SourceMaster, Message: "the answer to its pod's creation was lost and its pod p is not there"})
	if err != nil {
		t.Fatal(err)
	}
	fo, err := r.reg.Work().FailoverQueue(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fo) != 1 || fo[0].Job != "job" || !fo[0].Retry {
		t.Fatalf("failover = %+v, want the never-started shard queued again", fo)
	}
}

func TestDisabledJobDoesNotLaunch(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	r.trigger("job")
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "job", true, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("a disabled job launched")
	}
}

func TestExecutorChargedOncePerAgent(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 1.5, 1024) // task 0.5 + executor 1
	r.sched.launcher.round(r.ctx)
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_FINISHED")
	}
	r.trigger("job")
	r.offer("o2", 0.5, 1024) // executor still alive: the task alone fits
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 2 {
		t.Fatalf("accepts = %d: the live executor was charged again", len(r.drv.accepts))
	}
	r.sched.Failure(r.ctx, "agent-1", "app@-@agent-1", nil)
	r.sched.handleUpdates(r.ctx) // the stream's queued events
	if len(r.sched.st.executors) != 0 {
		t.Fatal("a terminated executor is still counted")
	}
	ids := []string{}
	for _, a := range r.drv.accepts {
		ids = append(ids, a.offers...)
	}
	sort.Strings(ids)
	if ids[0] != "o1" || ids[1] != "o2" {
		t.Fatalf("offers used: %v", ids)
	}
}

func TestEntriesOfAJobTheCatalogHasNotSeenYetAreKept(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := jobs.Default()
	j.JobName, j.AppName = "fresh", "app"
	if err := r.reg.Config().AddJob(r.ctx, j); err != nil { // registered, catalog not reloaded yet
		t.Fatal(err)
	}
	r.trigger("fresh")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if r.readyCount("fresh") != 1 {
		t.Fatal("the trigger of a job the catalog had not seen yet was dropped")
	}
	r.reload()
	r.offer("o2", 8, 4096) // the idle round declined o1
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatal("not launched once the catalog caught up")
	}
	// A job that really is gone has its entries dropped.
	if _, err := r.reg.Work().Trigger(r.ctx, "ghost", false, t0); err != nil {
		t.Fatal(err)
	}
	r.sched.launcher.round(r.ctx)
	if r.readyCount("ghost") != 0 {
		t.Fatal("the entry of a job that does not exist was kept")
	}
}

func TestMisfiredExecutionsAreLabelledInOrder(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1; j.Misfire = true; j.CPUCount = 0.1 })
	for range 3 {
		r.trigger("job")
	}
	var sources []jobs.ExecutionSource
	for i := range 3 {
		r.offer(fmt.Sprint("o", i), 8, 4096)
		r.sched.launcher.round(r.ctx)
		l := r.drv.accepts[len(r.drv.accepts)-1].launches[0]
		d := l.Task
		sources = append(sources, d.ExecutionSource)
		r.status(l.TaskID, "TASK_FINISHED")
	}
	want := []jobs.ExecutionSource{jobs.SourceNormal, jobs.SourceMisfire, jobs.SourceMisfire}
	if !reflect.DeepEqual(sources, want) {
		t.Fatalf("sources %v, want %v", sources, want)
	}
}

// TestGuardedDriverRefusesAfterLeadershipEnds: once the leader may not act,
// nothing reaches Mesos, and the launch's state is rolled back.
func TestGuardedDriverRefusesAfterLeadershipEnds(t *testing.T) {
	r := newRig(t)
	var lost error
	r.rebuild(func(d *Deps) { d.Driver = Guard(r.drv, func() error { return lost }) })
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {})
	r.trigger("job")
	lost = errors.New("lease lapsed")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("an ACCEPT reached Mesos after the leadership ended")
	}
	if len(r.running("job")) != 0 || r.readyCount("job") != 1 {
		t.Fatalf("launch state not rolled back: running %v ready %d", r.running("job"), r.readyCount("job"))
	}
}

// TestRoundsAreBounded: with MaxRoundTasks (the ZooKeeper registry: one
// launch commit is one multi of bounded size) a round places at most that
// many shards, whole jobs oldest first, and the rest follow in the next
// rounds; a gang larger than the bound still launches whole.
func TestRoundsAreBounded(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks = 4
	r.addApp("app", 0.1, 16)
	for _, name := range []string{"j1", "j2", "j3"} {
		r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = name, 3, 0.1, 16 })
		r.trigger(name)
		r.clk.Advance(time.Second) // queued in this order
	}
	launched := func() int {
		n := 0
		for _, a := range r.drv.accepts {
			n += len(a.launches)
		}
		return n
	}
	for round, want := range []int{3, 6, 9} {
		r.offer(fmt.Sprintf("o%d", round), 64, 65536)
		r.sched.launcher.round(r.ctx)
		if got := launched(); got != want {
			t.Fatalf("round %d: %d tasks launched in all, want %d", round, got, want)
		}
	}
}

// TestRoundBuildsOnlyWhatItCanPlace: with MaxRoundTasks, a round on ample
// offers builds requests for that many shards, not for the whole backlog
// (the rest are cut between two jobs before any request is built), keeps
// its offers, and tells the rest they wait for the next rounds.
func TestRoundBuildsOnlyWhatItCanPlace(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks = 4
	r.addApp("app", 0.1, 16)
	for i := range 50 {
		r.addJob(func(j *jobs.Config) {
			j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = fmt.Sprintf("j%02d", i), 2, 0.1, 16
		})
		r.trigger(fmt.Sprintf("j%02d", i))
		r.clk.Advance(time.Millisecond) // queued in this order
	}
	r.offer("o1", 1000, 1<<20)
	v, err := r.sched.launcher.view(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := round.Decide(v); len(p.Launches) != 4 || !p.More || len(p.Waiting) != 48 {
		t.Fatalf("plan: %d launches, more %v, %d waiting; want 4, more, 48", len(p.Launches), p.More, len(p.Waiting))
	}
	r.sched.launcher.round(r.ctx)
	r.offer("o2", 1000, 1<<20) // an ACCEPT consumes its offers whole
	r.clk.Advance(waitRecordAfter)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.declines) != 0 {
		t.Fatalf("a round cut by its bound declined %v", r.drv.declines)
	}
	got := r.waiting() // a commit of reasons holds 2 × MaxRoundTasks ops: the first 8
	if len(got) != 8 {
		t.Fatalf("%d reasons recorded, want 8", len(got))
	}
	for k, wt := range got {
		if wt.Reason != queue.WaitBehind || !strings.Contains(wt.Message, "at most 4 shards") {
			t.Fatalf("%s: %+v, want behind older work for the round's bound", k, wt)
		}
	}
}

// TestCappedRoundKeepsOffers: the offers a round capped by MaxRoundTasks
// left untouched are kept for the next round, not declined.
func TestCappedRoundKeepsOffers(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks = 1
	r.addApp("app", 0.1, 16)
	for _, name := range []string{"j1", "j2"} {
		r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = name, 1, 1, 16 })
		r.trigger(name)
		r.clk.Advance(time.Second)
	}
	r.offer("o1", 2, 64)
	r.offer("o2", 2, 64)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.drv.declines) != 0 {
		t.Fatalf("capped round: %d accepts, declines %v; want 1 accept and no decline", len(r.drv.accepts), r.drv.declines)
	}
	r.sched.launcher.round(r.ctx) // no new offer: the kept one serves
	if len(r.drv.accepts) != 2 {
		t.Fatalf("the next round launched %d in all, want 2 (on the kept offer)", len(r.drv.accepts))
	}
	// A capped round that places nothing (the work is larger than any
	// offer) declines them: kept, the next round would spin on them.
	for _, name := range []string{"big1", "big2"} {
		r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = name, 1, 4, 16 })
		r.trigger(name)
		r.clk.Advance(time.Second)
	}
	r.offer("o3", 2, 64)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 2 || len(r.drv.declines) != 1 || !slices.Equal(r.drv.declines[0].offers, []string{"o3"}) {
		t.Fatalf("a capped round that placed nothing: %d accepts, declines %v; want o3 declined", len(r.drv.accepts), r.drv.declines)
	}
}

// goneRunsAgain: reconciliation answers that the engine never got taskID,
// and its shard is queued again once, as a retry.
func goneRunsAgain(t *testing.T, r *rig, taskID string) {
	t.Helper()
	err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: "agent-1", State: "TASK_GONE",
		Reason: task.ReasonReconciliation, Source: "SOURCE_MASTER"})
	if err != nil {
		t.Fatal(err)
	}
	fo, err := r.reg.Work().FailoverQueue(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fo) != 1 || fo[0].Job != "job" || !fo[0].Retry {
		t.Fatalf("failover = %+v, want the never-started shard queued again", fo)
	}
}
