package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// movableClusters is Deps.Clusters over a list a test changes (a drain) within one term.
type movableClusters struct{ list []round.ClusterState }

func (c *movableClusters) Clusters(context.Context) []round.ClusterState { return c.list }

// overlapRig is a scheduler on clusters mesos and k8s with a one-shard DAEMON job d that
// declares a 60 s overlap, its task running on mesos; drain() drains mesos.
type overlapRig struct {
	*rig
	cl  *movableClusters
	old string // d's task on mesos
}

func newOverlapRig(t *testing.T) *overlapRig {
	r := &overlapRig{rig: newRig(t), cl: &movableClusters{list: []round.ClusterState{{Name: "mesos"}, {Name: "k8s"}}}}
	r.rebuild(func(d *Deps) { d.Clusters = r.cl })
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.JobExecutionType, j.ShardingTotalCount, j.Cron, j.MoveOverlapSeconds = "d", jobs.Daemon, 1, "0 0 0 * * ?", 60
	})
	r.trigger("d")
	r.offerOn("mesos", "o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	e, ok := r.running("d")[0]
	if !ok || e.AgentID != "mesos:agent-1" {
		t.Fatalf("d runs %+v, want on mesos", r.running("d"))
	}
	r.old = e.TaskID
	r.on("mesos", r.old, task.Running)
	r.clk.Advance(time.Second)
	return r
}

// on hands the scheduler an update of a task on a cluster's agent.
func (r *overlapRig) on(cluster, taskID string, s task.State) {
	r.t.Helper()
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: engine.QualifyID(cluster, "agent-1"), State: s}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *overlapRig) drain() {
	r.cl.list = []round.ClusterState{{Name: "mesos", Drained: true}, {Name: "k8s"}}
}

func (r *overlapRig) retiring() map[int]registry.Retiring {
	r.t.Helper()
	m, err := r.reg.Work().RetiringOf(r.ctx, "d")
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

func (r *overlapRig) kills() []string {
	r.drv.mu.Lock()
	defer r.drv.mu.Unlock()
	return slices.Clone(r.drv.kills)
}

// startMove drains mesos and runs the round that starts the overlap, then launches the
// new task on k8s; it returns the new task's id.
func (r *overlapRig) startMove() string {
	r.t.Helper()
	r.drain()
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); len(k) != 0 {
		r.t.Fatalf("the old task was stopped before its replacement started: kills %v", k)
	}
	if rt := r.retiring()[0]; rt.TaskID != r.old || !rt.StartBy.Equal(r.clk.Now().Add(time.Minute)) {
		r.t.Fatalf("retiring %+v, want the old task %s until %v", rt, r.old, r.clk.Now().Add(time.Minute))
	}
	if len(r.running("d")) != 0 || r.readyCount("d") != 1 {
		r.t.Fatalf("running %v, ready %d: want no running entry and the job queued", r.running("d"), r.readyCount("d"))
	}
	r.offerOn("k8s", "o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	e, ok := r.running("d")[0]
	if !ok || e.AgentID != "k8s:agent-1" || e.TaskID == r.old {
		r.t.Fatalf("the replacement: %+v", r.running("d"))
	}
	return e.TaskID
}

// TestOverlapMoveStartsBeforeStopping: a DAEMON shard of a job with moveOverlapSeconds,
// on a cluster that is drained, starts on the other cluster first; its old task is killed
// once, only when the new one runs, and its end leaves the new one the shard's task with
// nothing queued, retried or counted.
func TestOverlapMoveStartsBeforeStopping(t *testing.T) {
	r := newOverlapRig(t)
	moved := r.startMove()
	r.on("k8s", moved, task.Staging)
	r.clk.Advance(10 * time.Second)
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); len(k) != 0 {
		t.Fatalf("killed %v while the replacement is still staging", k)
	}
	r.on("k8s", moved, task.Running)
	if k := r.kills(); !slices.Equal(k, []string{r.old}) {
		t.Fatalf("kills %v, want the old task %s once its replacement runs", k, r.old)
	}
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(55 * time.Second) // past the bound: the replacement runs, nothing is given up
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); len(k) != 1 {
		t.Fatalf("kills %v, want the old task once (its kill asked again only after %v)", k, retireAgain)
	}
	r.clk.Advance(5 * time.Second) // still reported after retireAgain: the kill was lost, asked again
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); !slices.Equal(k, []string{r.old, r.old}) {
		t.Fatalf("kills %v, want the old task's kill asked again", k)
	}
	if e := r.running("d")[0]; e.TaskID != moved {
		t.Fatalf("running %+v, want the replacement", r.running("d"))
	}
	r.on("mesos", r.old, task.Killed)
	if len(r.retiring()) != 0 {
		t.Fatalf("the retiring record outlived its task: %+v", r.retiring())
	}
	if e := r.running("d")[0]; e.TaskID != moved || r.readyCount("d") != 0 {
		t.Fatalf("after the old task ended: running %+v, ready %d; want the replacement alone, nothing queued", r.running("d"), r.readyCount("d"))
	}
	if fo, _ := r.reg.Work().FailoverOf(r.ctx, "d"); len(fo) != 0 {
		t.Fatalf("the old task's end queued a failover: %+v", fo)
	}
	if rs := r.runState(); rs.Consecutive != 0 || rs.Failed {
		t.Fatalf("the old task's end was counted: %+v", rs)
	}
	r.clk.Advance(time.Hour)
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); len(k) != 2 {
		t.Fatalf("kills %v after the move", k)
	}
}

// TestOverlapGivenUpWhenTheNewTaskDoesNotRun: a replacement that fails to start and
// finds no room again by the bound is given up: the old task is the shard's running entry
// again (it never stopped), the retry and the queue entry go, and the move is tried again
// one overlap later; a replacement still staging at the bound is killed, again on a live
// update (an orphan's rule: the first kill may not have reached it), and its end recorded.
func TestOverlapGivenUpWhenTheNewTaskDoesNotRun(t *testing.T) {
	r := newOverlapRig(t)
	moved := r.startMove()
	r.on("k8s", moved, task.Failed) // never started: a retry, which finds no offer
	if fo, _ := r.reg.Work().FailoverOf(r.ctx, "d"); len(fo) != 1 {
		t.Fatalf("failover %+v, want the replacement's retry", fo)
	}
	r.clk.Advance(30 * time.Second)
	r.sched.launcher.round(r.ctx)
	if len(r.retiring()) != 1 || len(r.kills()) != 0 {
		t.Fatalf("within the bound: retiring %+v, kills %v", r.retiring(), r.kills())
	}
	r.clk.Advance(30 * time.Second) // the bound
	r.sched.launcher.round(r.ctx)
	if e, ok := r.running("d")[0]; !ok || e.TaskID != r.old || e.State != task.Running {
		t.Fatalf("after giving up: running %+v, want the old task", r.running("d"))
	}
	if fo, _ := r.reg.Work().FailoverOf(r.ctx, "d"); len(fo) != 0 || len(r.retiring()) != 0 || r.readyCount("d") != 0 {
		t.Fatalf("after giving up: failover %+v, retiring %+v, ready %d", fo, r.retiring(), r.readyCount("d"))
	}
	if k := r.kills(); len(k) != 0 {
		t.Fatalf("kills %v: the old task runs on", k)
	}

	// Within an overlap's time the move is not tried again; then it is.
	r.clk.Advance(30 * time.Second)
	r.sched.launcher.round(r.ctx)
	if len(r.retiring()) != 0 {
		t.Fatalf("the move was tried again at once: %+v", r.retiring())
	}
	r.clk.Advance(30 * time.Second)
	again := r.startMove()
	r.on("k8s", again, task.Staging)
	r.clk.Advance(time.Minute)
	r.sched.launcher.round(r.ctx)
	if e := r.running("d")[0]; e.TaskID != r.old {
		t.Fatalf("after giving up the second time: running %+v", r.running("d"))
	}
	if k := r.kills(); !slices.Equal(k, []string{again}) {
		t.Fatalf("kills %v, want the staging replacement %s", k, again)
	}
	r.on("k8s", again, task.Running) // its kill not done yet: asked again
	r.on("k8s", again, task.Killed)
	if k := r.kills(); !slices.Equal(k, []string{again, again}) {
		t.Fatalf("kills %v, want the given-up replacement killed, and again on its live update", k)
	}
	if e := r.running("d")[0]; e.TaskID != r.old || len(r.retiring()) != 0 {
		t.Fatalf("the old task's entry after its given-up replacement ended: %+v", r.running("d"))
	}
}

// TestOverlapAcrossLeaderChange: a new term reconciles the retiring task with the
// running ones, and kills it (once) when it finds its replacement running; a retiring
// task's answer is not taken for an orphan.
func TestOverlapAcrossLeaderChange(t *testing.T) {
	r := newOverlapRig(t)
	moved := r.startMove()
	r.on("k8s", moved, task.Running)
	if k := r.kills(); !slices.Equal(k, []string{r.old}) {
		t.Fatalf("kills %v", k)
	}

	// The old term's kill was lost with it.
	cl := r.cl
	r.rebuild(func(d *Deps) { d.Clusters = cl })
	r.sched.recon.begin(r.ctx)
	r.drv.mu.Lock()
	asked := r.drv.reconciles[len(r.drv.reconciles)-1]
	r.drv.mu.Unlock()
	if !slices.ContainsFunc(asked, func(ref engine.TaskRef) bool { return ref.TaskID == r.old }) ||
		!slices.ContainsFunc(asked, func(ref engine.TaskRef) bool { return ref.TaskID == moved }) {
		t.Fatalf("the new term reconciled %+v, want the retiring task and its replacement", asked)
	}
	if r.sched.st.awaiting[r.old] {
		t.Fatal("launching waits for the retiring task's answer")
	}
	r.on("mesos", r.old, task.Running) // its answer
	r.on("k8s", moved, task.Running)
	if k := r.kills(); !slices.Equal(k, []string{r.old}) {
		t.Fatalf("kills %v: the answers alone kill nothing, the round does", k)
	}
	r.sched.launcher.round(r.ctx)
	r.sched.launcher.round(r.ctx)
	if k := r.kills(); !slices.Equal(k, []string{r.old, r.old}) {
		t.Fatalf("kills %v, want the new term to kill the retiring task once", k)
	}
	r.on("mesos", r.old, task.Killed)
	if len(r.retiring()) != 0 || r.running("d")[0].TaskID != moved || r.readyCount("d") != 0 {
		t.Fatalf("after the old task ended: retiring %+v, running %+v, ready %d", r.retiring(), r.running("d"), r.readyCount("d"))
	}
}

// TestOverlapBoundHoldsAcrossLeaderChange: a term that ends between the overlap's start
// and the new task's launch leaves the shard retiring and queued; the next term holds the
// same StartBy (it is in the registry), and gives the move up then when the new task has
// found no room.
func TestOverlapBoundHoldsAcrossLeaderChange(t *testing.T) {
	r := newOverlapRig(t)
	r.drain()
	r.sched.launcher.round(r.ctx)
	startBy := r.retiring()[0].StartBy
	cl := r.cl
	r.rebuild(func(d *Deps) { d.Clusters = cl })
	r.clk.Advance(time.Minute)
	r.sched.launcher.round(r.ctx)
	if e := r.running("d")[0]; e.TaskID != r.old || !r.clk.Now().Equal(startBy) {
		t.Fatalf("the new term at StartBy: running %+v", r.running("d"))
	}
	if len(r.kills()) != 0 || len(r.retiring()) != 0 || r.readyCount("d") != 0 {
		t.Fatalf("kills %v, retiring %+v, ready %d", r.kills(), r.retiring(), r.readyCount("d"))
	}
}

// TestRetiringTaskOnALostCluster: a retiring task whose cluster is lost counts lost once
// past the cluster's bound (its record goes; nothing is queued or retried for it), and
// back, it is a task the registry does not know, killed once.
func TestRetiringTaskOnALostCluster(t *testing.T) {
	r := newOverlapRig(t)
	moved := r.startMove()
	r.on("k8s", moved, task.Staging)
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: r.old, AgentID: "mesos:agent-1", State: task.Unreachable,
		LostCluster: "mesos", UnreachableSince: r.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	r.on("k8s", moved, task.Running) // the old task's cluster is away: no kill is sent there
	if k := r.kills(); len(k) != 0 {
		t.Fatalf("kills %v sent to a lost cluster", k)
	}
	r.clk.Advance(r.sched.deps.Options.Unreachable + time.Second)
	r.sched.recon.periodic(r.ctx)
	if len(r.retiring()) != 0 {
		t.Fatalf("the lost retiring task's record stays: %+v", r.retiring())
	}
	if e := r.running("d")[0]; e.TaskID != moved || r.readyCount("d") != 0 {
		t.Fatalf("after the retiring task counted lost: running %+v, ready %d", r.running("d"), r.readyCount("d"))
	}
	if fo, _ := r.reg.Work().FailoverOf(r.ctx, "d"); len(fo) != 0 {
		t.Fatalf("the lost retiring task queued a failover: %+v", fo)
	}
	lost := len(r.kills()) // counting it lost asks the engine to kill it (unreachable tasks' rule)
	r.sched.recon.periodic(r.ctx)
	r.on("mesos", r.old, task.Running) // the cluster is back
	if k := r.kills(); len(k) != lost+1 || k[len(k)-1] != r.old {
		t.Fatalf("kills %v after the cluster came back", k)
	}
	r.on("mesos", r.old, task.Killed)
	if e := r.running("d")[0]; e.TaskID != moved || len(r.retiring()) != 0 {
		t.Fatalf("running %+v, retiring %+v", r.running("d"), r.retiring())
	}
}

// TestOverlapEndsWithItsJob: updating (or deleting) a job in an overlap stops its
// retiring task with its running one.
func TestOverlapEndsWithItsJob(t *testing.T) {
	r := newOverlapRig(t)
	moved := r.startMove()
	r.sched.config.killJob(r.ctx, "d")
	if k := r.kills(); !slices.Contains(k, moved) || !slices.Contains(k, r.old) {
		t.Fatalf("kills %v, want both tasks", k)
	}
}

// TestDaemonPlacementChangeMovesWithoutRestart: changing only a DAEMON job's clusters
// does not restart its shards (an update of anything else does): the round moves them,
// here with the job's declared overlap.
func TestDaemonPlacementChangeMovesWithoutRestart(t *testing.T) {
	r := newOverlapRig(t)
	cfg, err := r.reg.Config().Job(r.ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters = []string{"k8s"}
	if err := r.reg.Config().UpdateJob(r.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "d"})
	if k := r.kills(); len(k) != 0 {
		t.Fatalf("a placement change killed %v", k)
	}
	r.sched.launcher.round(r.ctx)
	if rt := r.retiring()[0]; rt.TaskID != r.old || len(r.kills()) != 0 {
		t.Fatalf("retiring %+v, kills %v: want the overlap begun", r.retiring(), r.kills())
	}

	cfg.Description = "another"
	if err := r.reg.Config().UpdateJob(r.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r.sched.config.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "d"})
	if k := r.kills(); !slices.Equal(k, []string{r.old}) {
		t.Fatalf("kills %v: another change stops the job's run, its retiring task with it", k)
	}
}

// TestOverlapGivenUpForEveryShard: a two-shard job whose shards both move and find no
// room is given up shard by shard in one round: both old tasks run on as the shards'
// entries, and the job's queue entry goes with the last.
func TestOverlapGivenUpForEveryShard(t *testing.T) {
	r := newRig(t)
	cl := &movableClusters{list: []round.ClusterState{{Name: "mesos"}, {Name: "k8s"}}}
	r.rebuild(func(d *Deps) { d.Clusters = cl })
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.JobExecutionType, j.ShardingTotalCount, j.Cron, j.MoveOverlapSeconds = "two", jobs.Daemon, 2, "0 0 0 * * ?", 30
	})
	r.trigger("two")
	r.offerOn("mesos", "o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	old := map[int]string{}
	for item, e := range r.running("two") {
		old[item] = e.TaskID
		if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: e.TaskID, AgentID: e.AgentID, State: task.Running}); err != nil {
			t.Fatal(err)
		}
	}
	if len(old) != 2 {
		t.Fatalf("running %+v", r.running("two"))
	}
	r.clk.Advance(time.Second)
	cl.list = []round.ClusterState{{Name: "mesos", Drained: true}, {Name: "k8s"}}
	r.sched.launcher.round(r.ctx)
	if m, _ := r.reg.Work().RetiringOf(r.ctx, "two"); len(m) != 2 || len(r.running("two")) != 0 || r.readyCount("two") != 1 {
		t.Fatalf("retiring %+v, running %+v, ready %d", m, r.running("two"), r.readyCount("two"))
	}
	r.clk.Advance(30 * time.Second)
	r.sched.launcher.round(r.ctx)
	for item, id := range old {
		if e := r.running("two")[item]; e.TaskID != id {
			t.Errorf("shard %d runs %+v after giving up, want %s", item, e, id)
		}
	}
	if m, _ := r.reg.Work().RetiringOf(r.ctx, "two"); len(m) != 0 || r.readyCount("two") != 0 || len(r.drv.kills) != 0 {
		t.Fatalf("retiring %+v, ready %d, kills %v", m, r.readyCount("two"), r.drv.kills)
	}
}

// TestOverlapCountsAgainstTheNamespaceLimit: while a shard moves with an overlap, its
// retiring task holds its resources in its namespace's usage. A namespace whose limit
// has no room for the replacement beside the old task keeps its limit: the move waits
// (namespace_limit, the reason naming the overlap), is given up at the bound with the old
// task running on, and succeeds once the limit leaves room for both.
func TestOverlapCountsAgainstTheNamespaceLimit(t *testing.T) {
	r := newOverlapRig(t)
	setLimit := func(cpus float64) {
		t.Helper()
		rec := namespace.Record{Name: namespace.Default, Limit: &namespace.Resources{CPUCount: cpus, MemoryMB: 4096}}
		if _, err := r.reg.Tenancy().PutNamespace(r.ctx, rec); err != nil {
			t.Fatal(err)
		}
		r.sched.CapacityChanged()
	}
	// d's task (0.5 CPU) and its app's executor (0.1) on mesos hold 0.6 CPU; the
	// replacement, with an executor of its own on k8s, needs 0.6 more.
	setLimit(1)
	r.drain()
	r.sched.launcher.round(r.ctx)
	if len(r.retiring()) != 1 {
		t.Fatalf("retiring %+v, want the overlap begun", r.retiring())
	}
	r.offerOn("k8s", "o2", 8, 4096)
	r.round()
	if len(r.running("d")) != 0 {
		t.Fatalf("the replacement launched past the namespace's limit: %+v", r.running("d"))
	}
	w := r.waiting()[queue.WaitKey(false, "d", 0)]
	if w.Reason != queue.WaitNSLimit || !strings.Contains(w.Message, "0.5 CPUs and 64 MB of it by the old tasks of DAEMON shards moving with an overlap") {
		t.Fatalf("the replacement waits %+v, want namespace_limit naming the retiring task", w)
	}
	r.clk.Advance(time.Minute) // the bound
	r.sched.launcher.round(r.ctx)
	if e := r.running("d")[0]; e.TaskID != r.old || len(r.retiring()) != 0 || len(r.kills()) != 0 || r.readyCount("d") != 0 {
		t.Fatalf("after giving up: running %+v, retiring %+v, kills %v, ready %d; want the old task running on",
			r.running("d"), r.retiring(), r.kills(), r.readyCount("d"))
	}

	// Room for both: the move, tried again an overlap later, launches the replacement
	// beside the old task.
	setLimit(1.2)
	r.clk.Advance(time.Minute)
	moved := r.startMove()
	r.on("k8s", moved, task.Running)
	if k := r.kills(); !slices.Equal(k, []string{r.old}) {
		t.Fatalf("kills %v, want the old task once its replacement runs", k)
	}
}
