package metrics

import (
	"testing"
	"time"

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
