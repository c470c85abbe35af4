package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/registry"
)

var (
	clusterRunningDesc = prometheus.NewDesc("elasticjob_cluster_running_tasks",
		"Tasks recorded as running, by the cluster they run on (with several clusters: docs/clusters.md).", []string{"cluster"}, nil)
	clusterDrainedDesc = prometheus.NewDesc("elasticjob_cluster_drained",
		"1 when the cluster is drained (no new work is placed there), else 0.", []string{"cluster"}, nil)
)

// clusterState is the collector of the clusters' work and drain marks.
type clusterState struct {
	m     *Metrics
	reg   *registry.Registry
	names []string // the home cluster first: a task whose agent names no cluster is its
	errs  prometheus.Counter
}

// ObserveClusters exports, at each scrape while this instance leads, each cluster's
// running tasks and drain mark (names: the configured clusters, the home one first).
func (m *Metrics) ObserveClusters(reg *registry.Registry, names []string) {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "elasticjob_cluster_state_read_errors_total",
		Help: "Scrapes whose reads of the clusters' state failed (their cluster metrics were left out)."})
	m.Register(&clusterState{m: m, reg: reg, names: names, errs: errs}, errs)
}

func (s *clusterState) Describe(ch chan<- *prometheus.Desc) {
	ch <- clusterRunningDesc
	ch <- clusterDrainedDesc
}

func (s *clusterState) Collect(ch chan<- prometheus.Metric) {
	if !s.m.leading.Load() || len(s.names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	running, err := s.reg.Work().RunningTasks(ctx)
	if err != nil {
		s.errs.Inc()
		return
	}
	drained, err := s.reg.Clusters().Drained(ctx)
	if err != nil {
		s.errs.Inc()
		return
	}
	count := make(map[string]int, len(s.names))
	for _, items := range running {
		for _, e := range items {
			c := engine.ClusterOf(e.AgentID)
			if c == "" {
				c = s.names[0]
			}
			count[c]++
		}
	}
	for _, n := range s.names {
		ch <- prometheus.MustNewConstMetric(clusterRunningDesc, prometheus.GaugeValue, float64(count[n]), n)
		d := 0.0
		if _, ok := drained[n]; ok {
			d = 1
		}
		ch <- prometheus.MustNewConstMetric(clusterDrainedDesc, prometheus.GaugeValue, d, n)
	}
}
