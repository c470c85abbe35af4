package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// clusterList is Deps.Clusters over a fixed list.
type clusterList []round.ClusterState

func (c clusterList) Clusters(context.Context) []round.ClusterState { return c }

// offerOn is an offer of an agent of a cluster, its ids qualified as engine/clusters
// qualifies them.
func (r *rig) offerOn(cluster, id string, cpus, mem float64) {
	o := engine.Offer{ID: engine.QualifyID(cluster, id), AgentID: engine.QualifyID(cluster, "agent-1"), Hostname: cluster + "-host", CPUs: cpus, MemMB: mem}
	r.sched.st.offers[o.ID] = o
	r.sched.st.noteOffers([]engine.Offer{o})
}

// TestLaunchFollowsClusterPolicy: with two clusters offering, a job's execution runs on
// the first cluster it names with room, the launch and the running entry naming that
// cluster's agent; a namespace's clusters hold for its jobs that name none; a drained
// cluster takes nothing and the wait says so.
func TestLaunchFollowsClusterPolicy(t *testing.T) {
	r := newRig(t)
	r.rebuild(func(d *Deps) { d.Clusters = clusterList{{Name: "mesos"}, {Name: "k8s"}} })
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.Clusters = "pref", []string{"k8s", "mesos"} })
	if _, err := r.reg.Tenancy().PutNamespace(r.ctx, namespace.Record{Name: "team", Clusters: []string{"mesos"}}); err != nil {
		t.Fatal(err)
	}
	r.sched.CapacityChanged()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "app", "http://example.invalid/app.tar.gz", "bin/start.sh", 0.1, 32
	if err := r.reg.In("team").Config().AddApp(r.ctx, a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB = "ns", "app", 0.5, 64
	if err := r.reg.In("team").Config().AddJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.trigger("pref")
	r.trigger("team~ns")
	r.offerOn("mesos", "o1", 8, 4096)
	r.offerOn("k8s", "o1", 8, 4096)
	r.sched.launcher.round(r.ctx)

	on := map[string]string{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			on[l.Task.ShardingContext.JobName] = a.offers[0] + " " + l.AgentID
		}
	}
	if on["pref"] != "k8s:o1 k8s:agent-1" || on["ns"] != "mesos:o1 mesos:agent-1" {
		t.Fatalf("placements %v", on)
	}
	for job, want := range map[string]string{"pref": "k8s:agent-1", "team~ns": "mesos:agent-1"} {
		for item, e := range r.running(job) {
			if e.AgentID != want {
				t.Errorf("%s shard %d recorded on %q, want %q", job, item, e.AgentID, want)
			}
		}
	}

	// k8s drained: a job limited to it waits, naming it.
	r.rebuild(func(d *Deps) { d.Clusters = clusterList{{Name: "mesos"}, {Name: "k8s", Drained: true}} })
	r.addJob(func(j *jobs.Config) { j.JobName, j.Clusters = "pinned", []string{"k8s"} })
	r.trigger("pinned")
	r.offerOn("k8s", "o2", 8, 4096)
	r.round()
	w := r.waiting()[queue.WaitKey(false, "pinned", 0)]
	if w.Reason != queue.WaitClusterUnavailable || len(r.running("pinned")) != 0 {
		t.Errorf("pinned on drained k8s: wait %+v, running %v", w, r.running("pinned"))
	}
	if !strings.Contains(w.Message, "k8s (drained)") {
		t.Errorf("the wait does not name the drained cluster: %s", w.Message)
	}
}

// TestDrainMovesDaemons: a DAEMON shard running on a cluster that is drained (or that its
// job no longer names) is stopped once, and once stopped runs again on a cluster that takes
// work; a DAEMON with nowhere else to go runs on; a TRANSIENT run is never stopped.
func TestDrainMovesDaemons(t *testing.T) {
	r := newRig(t)
	r.rebuild(func(d *Deps) { d.Clusters = clusterList{{Name: "mesos"}, {Name: "k8s"}} })
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.JobExecutionType, j.ShardingTotalCount, j.Cron = "d", jobs.Daemon, 1, "0 0 0 * * ?"
	})
	r.addJob(func(j *jobs.Config) {
		j.JobName, j.JobExecutionType, j.ShardingTotalCount, j.Clusters, j.Cron = "pinned", jobs.Daemon, 1, []string{"mesos"}, "0 0 0 * * ?"
	})
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount = "batch", 1 })
	r.reload()
	for _, job := range []string{"d", "pinned", "batch"} {
		r.trigger(job)
	}
	r.offerOn("mesos", "o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	for _, job := range []string{"d", "pinned", "batch"} {
		if e := r.running(job)[0]; e.AgentID != "mesos:agent-1" {
			t.Fatalf("%s runs on %q, want mesos", job, e.AgentID)
		}
	}
	for _, job := range []string{"d", "pinned", "batch"} {
		st := engine.Status{TaskID: r.running(job)[0].TaskID, AgentID: "mesos:agent-1", State: task.Running}
		if err := r.sched.status.handle(r.ctx, r.reg, st); err != nil {
			t.Fatal(err)
		}
	}
	moving := r.running("d")[0].TaskID

	r.rebuild(func(d *Deps) { d.Clusters = clusterList{{Name: "mesos", Drained: true}, {Name: "k8s"}} })
	r.sched.launcher.round(r.ctx)
	r.sched.launcher.round(r.ctx)
	if !slices.Equal(r.drv.kills, []string{moving}) {
		t.Fatalf("kills %v, want only d's shard %s (pinned has nowhere to go, batch is not a DAEMON; once each)", r.drv.kills, moving)
	}
	r.clk.Advance(time.Second)
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: moving, AgentID: "mesos:agent-1", State: task.Killed}); err != nil {
		t.Fatal(err)
	}
	r.offerOn("k8s", "o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if e, ok := r.running("d")[0]; !ok || e.AgentID != "k8s:agent-1" || e.TaskID == moving {
		t.Fatalf("d after the move: %+v", r.running("d"))
	}
}

// offersByCluster is a Gauges that keeps what each round reports on offer per cluster.
type offersByCluster struct {
	nopGauges
	cpus, mem map[string]float64
}

func (o *offersByCluster) OffersHeld(cpus, mem map[string]float64) { o.cpus, o.mem = cpus, mem }

// TestRoundReportsOffersPerCluster: each launch round tells the gauges what every
// cluster has on offer (elasticjob_cluster_cpus{kind="offered"}).
func TestRoundReportsOffersPerCluster(t *testing.T) {
	r := newRig(t)
	g := &offersByCluster{}
	r.rebuild(func(d *Deps) { d.Clusters, d.Gauges = clusterList{{Name: "mesos"}, {Name: "k8s"}}, g })
	r.offerOn("mesos", "o1", 8, 4096)
	r.offerOn("k8s", "o2", 2.5, 1024)
	r.sched.launcher.round(r.ctx)
	if g.cpus["mesos"] != 8 || g.cpus["k8s"] != 2.5 || g.mem["mesos"] != 4096 || g.mem["k8s"] != 1024 {
		t.Fatalf("offered: cpus %v, mem %v", g.cpus, g.mem)
	}
}

// roundsDriver is a fakeDriver of clusters whose engines bound a round's tasks
// (engine.ClusterRounds).
type roundsDriver struct {
	*fakeDriver
	bounds map[string]int
}

func (d roundsDriver) RoundTasks(cluster string) int { return d.bounds[cluster] }

// TestRoundClustersCarryTheirBounds: the round hears each cluster's engine's bound on a
// round's tasks there, through the fence; the drain marks stay as read, and the list read
// is not changed under its owner.
func TestRoundClustersCarryTheirBounds(t *testing.T) {
	list := clusterList{{Name: "mesos"}, {Name: "k8s", Drained: true}}
	l := &launcher{clusters: list, driver: Guard(roundsDriver{fakeDriver: newFakeDriver(), bounds: map[string]int{"k8s": 50}}, nil)}
	got := l.roundClusters(context.Background())
	want := []round.ClusterState{{Name: "mesos"}, {Name: "k8s", Drained: true, MaxTasks: 50}}
	if !slices.Equal(got, want) || list[1].MaxTasks != 0 {
		t.Fatalf("round clusters %+v, want %+v (the list read: %+v)", got, want, list)
	}
	l.driver = newFakeDriver() // no bounds declared: the list as read
	if got := l.roundClusters(context.Background()); !slices.Equal(got, []round.ClusterState(list)) {
		t.Fatalf("round clusters %+v, want %+v", got, list)
	}
}

// TestRoundDeclinesOtherClustersOffersWhenOneIsFull: a round that stops placing on a
// cluster because it took its round's tasks (k8s, bound 1) follows at once for its work
// and keeps its offers for it (k8s:o2), but declines the other cluster's offer none of
// its work could use (mesos:o2, too small): held on, an engine that offers an agent's
// freed resources only once its offer there is answered would never offer them again
// while every round fills the bounded cluster.
func TestRoundDeclinesOtherClustersOffersWhenOneIsFull(t *testing.T) {
	r := newRig(t)
	drv := roundsDriver{fakeDriver: r.drv, bounds: map[string]int{"k8s": 1}}
	r.rebuild(func(d *Deps) {
		d.Driver, d.Clusters = Guard(drv, func() error { return nil }), clusterList{{Name: "mesos"}, {Name: "k8s"}}
	})
	r.addApp("app", 0.1, 32)
	for _, name := range []string{"a", "b", "c"} {
		r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.Clusters = name, 1, []string{"k8s", "mesos"} })
		r.trigger(name)
	}
	offer := func(cluster, id, agent string, cpus float64) {
		o := engine.Offer{ID: engine.QualifyID(cluster, id), AgentID: engine.QualifyID(cluster, agent), Hostname: agent, CPUs: cpus, MemMB: 4096}
		r.sched.st.offers[o.ID] = o
		r.sched.st.noteOffers([]engine.Offer{{ID: o.ID, AgentID: o.AgentID, Hostname: agent, CPUs: 8, MemMB: 4096}})
	}
	offer("mesos", "o1", "agent-1", 8)
	offer("mesos", "o2", "agent-2", 0.2)
	offer("k8s", "o1", "agent-1", 8)
	offer("k8s", "o2", "agent-2", 8)
	r.sched.launcher.round(r.ctx)

	if got := acceptedJobs(r.drv); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("launched %v, want a, b, c", got)
	}
	var declined []string
	for _, dc := range r.drv.declines {
		declined = append(declined, dc.offers...)
	}
	if !slices.Equal(declined, []string{engine.QualifyID("mesos", "o2")}) {
		t.Fatalf("declined %v, want only mesos's unused offer", declined)
	}
	if _, ok := r.sched.st.offers[engine.QualifyID("k8s", "o2")]; !ok {
		t.Fatal("the full cluster's unused offer was not kept for the next round")
	}
}
