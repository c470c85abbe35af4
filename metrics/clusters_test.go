package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// Each cluster's running tasks (a task whose agent names no cluster is the home cluster's)
// and its drain mark, exported by the leader.
func TestClustersFromTheRegistry(t *testing.T) {
	m, reg, _ := stateRig(t)
	m.ObserveClusters(reg, []string{"mesos-dc1", "k8s-prod"})
	ctx := t.Context()
	commit(t, reg.Change().Launch("busy", 0, task.Entry{TaskID: "b0", State: "TASK_RUNNING", AgentID: "k8s-prod:node-1"}))
	commit(t, reg.Change().Launch("busy", 1, task.Entry{TaskID: "b1", State: "TASK_RUNNING", AgentID: "k8s-prod:node-2"}))
	commit(t, reg.Change().Launch("flaky", 0, task.Entry{TaskID: "f0", State: "TASK_RUNNING", AgentID: "S0"}))
	if err := reg.Clusters().Drain(ctx, registry.Drain{Cluster: "mesos-dc1", Since: t0.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if f := family(t, m, "elasticjob_cluster_running_tasks"); f != nil {
		t.Fatal("exported by a standby")
	}
	m.Leading(true)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"elasticjob_cluster_running_tasks", "cluster=k8s-prod", 2},
		{"elasticjob_cluster_running_tasks", "cluster=mesos-dc1", 1},
		{"elasticjob_cluster_drained", "cluster=mesos-dc1", 1},
		{"elasticjob_cluster_drained", "cluster=k8s-prod", 0},
	} {
		s := series(t, m, c.name, c.labels)
		if s == nil || s.GetGauge().GetValue() != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, s, c.want)
		}
	}
}

// The per-cluster launches, resources and connections, read as Prometheus scrapes them
// (/metrics text): launches counted by the cluster of the task's agent (an id naming none
// is the home cluster's), offered from the last launch round's offers, used from the
// running tasks, connected from the leader's engine (absent for a cluster it does not
// report).
func TestClusterMetricsText(t *testing.T) {
	m, reg, _ := stateRig(t)
	m.ObserveClusters(reg, []string{"mesos-dc1", "k8s-prod"})
	m.ObserveConnections(func() map[string]bool { return map[string]bool{"mesos-dc1": true, "k8s-prod": false} })
	commit(t, reg.Change().Launch("busy", 0, task.Entry{TaskID: "b0", State: "TASK_RUNNING", AgentID: "k8s-prod:node-1"}))
	commit(t, reg.Change().Launch("busy", 1, task.Entry{TaskID: "b1", State: "TASK_RUNNING", AgentID: "k8s-prod:node-2"}))
	commit(t, reg.Change().Launch("flaky", 0, task.Entry{TaskID: "f0", State: "TASK_RUNNING", AgentID: "S0"}))
	for _, a := range []string{"k8s-prod:node-1", "k8s-prod:node-2", "S0"} {
		m.Launched(observe.TaskEvent{TaskID: "t-" + a, Job: "busy", AgentID: a, At: t0})
	}
	m.OffersHeld(map[string]float64{"k8s-prod": 3.5, "": 1}, map[string]float64{"k8s-prod": 2048, "": 512})
	m.Leading(true)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := rec.Body.String()
	for _, line := range []string{
		`elasticjob_cluster_launches_total{cluster="k8s-prod"} 2`,
		`elasticjob_cluster_launches_total{cluster="mesos-dc1"} 1`,
		`elasticjob_cluster_connected{cluster="mesos-dc1"} 1`,
		`elasticjob_cluster_connected{cluster="k8s-prod"} 0`,
		`elasticjob_cluster_cpus{cluster="k8s-prod",kind="offered"} 3.5`,
		`elasticjob_cluster_cpus{cluster="k8s-prod",kind="used"} 1`,
		`elasticjob_cluster_cpus{cluster="mesos-dc1",kind="offered"} 1`,
		`elasticjob_cluster_cpus{cluster="mesos-dc1",kind="used"} 0.5`,
		`elasticjob_cluster_memory_mb{cluster="k8s-prod",kind="offered"} 2048`,
		`elasticjob_cluster_memory_mb{cluster="k8s-prod",kind="used"} 128`,
		`elasticjob_cluster_memory_mb{cluster="mesos-dc1",kind="used"} 64`,
		`elasticjob_cluster_running_tasks{cluster="k8s-prod"} 2`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	m.ObserveConnections(func() map[string]bool { return nil }) // a standby, or one engine
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if strings.Contains(rec.Body.String(), "elasticjob_cluster_connected{") {
		t.Error("a connection exported with no engine reporting it")
	}
}
