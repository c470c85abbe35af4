package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/registry"
)

var (
	clusterRunningDesc = prometheus.NewDesc("elasticjob_cluster_running_tasks",
		"Tasks recorded as running, by the cluster they run on (with several clusters: docs/clusters.md).", []string{"cluster"}, nil)
	clusterDrainedDesc = prometheus.NewDesc("elasticjob_cluster_drained",
		"1 when the cluster is drained (no new work is placed there), else 0.", []string{"cluster"}, nil)
	clusterConnectedDesc = prometheus.NewDesc("elasticjob_cluster_connected",
		"1 while the leader's engine of the cluster is connected, else 0 (several clusters only).", []string{"cluster"}, nil)
	clusterCPUsDesc = prometheus.NewDesc("elasticjob_cluster_cpus",
		"CPUs of the cluster by kind: offered (free in the offers the last launch round started from), used (what the tasks running there asked for).",
		[]string{"cluster", "kind"}, nil)
	clusterMemDesc = prometheus.NewDesc("elasticjob_cluster_memory_mb",
		"Memory of the cluster in MB by kind: offered (free in the offers the last launch round started from), used (what the tasks running there asked for).",
		[]string{"cluster", "kind"}, nil)
)

// clusterOffers is what was on offer per cluster at the last launch round (OffersHeld).
type clusterOffers struct {
	mu          sync.Mutex
	cpus, memMB map[string]float64
}

// OffersHeld keeps what each cluster had on offer at the launch round for the next
// scrape (observe.ClusterOffers); the cluster "" is the home cluster.
func (m *Metrics) OffersHeld(cpus, memMB map[string]float64) {
	m.offered.mu.Lock()
	defer m.offered.mu.Unlock()
	m.offered.cpus, m.offered.memMB = cpus, memMB
}

// ObserveConnections exports each cluster's connection as connected reports it (the
// leader's composed engine; nil or an empty answer: none is exported).
func (m *Metrics) ObserveConnections(connected func() map[string]bool) {
	m.clusterMu.Lock()
	defer m.clusterMu.Unlock()
	m.connected = connected
}

// clusterOf is the cluster of an agent id: its qualified prefix, else the home cluster.
func (m *Metrics) clusterOf(agentID string) string {
	if c := engine.ClusterOf(agentID); c != "" {
		return c
	}
	m.clusterMu.Lock()
	defer m.clusterMu.Unlock()
	if m.home != "" {
		return m.home
	}
	return "default"
}

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
	if len(names) > 0 {
		m.clusterMu.Lock()
		m.home = names[0]
		m.clusterMu.Unlock()
	}
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "elasticjob_cluster_state_read_errors_total",
		Help: "Scrapes whose reads of the clusters' state failed (their cluster metrics were left out)."})
	m.Register(&clusterState{m: m, reg: reg, names: names, errs: errs}, errs)
}

func (s *clusterState) Describe(ch chan<- *prometheus.Desc) {
	ch <- clusterRunningDesc
	ch <- clusterDrainedDesc
	ch <- clusterConnectedDesc
	ch <- clusterCPUsDesc
	ch <- clusterMemDesc
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
	retiring, err := s.reg.Work().RetiringTasks(ctx)
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
	usedCPUs, usedMem := map[string]float64{}, map[string]float64{}
	add := func(job string, agents []string) {
		cfg, err := s.reg.Config().Job(ctx, job)
		known := err == nil // deleted while its tasks end: no resources to tell
		for _, a := range agents {
			c := engine.ClusterOf(a)
			if c == "" {
				c = s.names[0]
			}
			count[c]++
			if known {
				usedCPUs[c] += cfg.CPUCount
				usedMem[c] += cfg.MemoryMB
			}
		}
	}
	for job, items := range running {
		agents := make([]string, 0, len(items))
		for _, e := range items {
			agents = append(agents, e.AgentID)
		}
		add(job, agents)
	}
	for job, items := range retiring { // an overlapping move's old task still runs there
		agents := make([]string, 0, len(items))
		for _, r := range items {
			agents = append(agents, r.AgentID)
		}
		add(job, agents)
	}
	s.m.offered.mu.Lock()
	offCPUs, offMem := s.m.offered.cpus, s.m.offered.memMB
	s.m.offered.mu.Unlock()
	s.m.clusterMu.Lock()
	connectedOf := s.m.connected
	s.m.clusterMu.Unlock()
	var connected map[string]bool
	if connectedOf != nil {
		connected = connectedOf()
	}
	for i, n := range s.names {
		ch <- prometheus.MustNewConstMetric(clusterRunningDesc, prometheus.GaugeValue, float64(count[n]), n)
		d := 0.0
		if _, ok := drained[n]; ok {
			d = 1
		}
		ch <- prometheus.MustNewConstMetric(clusterDrainedDesc, prometheus.GaugeValue, d, n)
		if up, ok := connected[n]; ok {
			ch <- prometheus.MustNewConstMetric(clusterConnectedDesc, prometheus.GaugeValue, b2f(up), n)
		}
		oc, om := offCPUs[n], offMem[n]
		if i == 0 { // an offer whose agent names no cluster is the home cluster's
			oc, om = oc+offCPUs[""], om+offMem[""]
		}
		ch <- prometheus.MustNewConstMetric(clusterCPUsDesc, prometheus.GaugeValue, oc, n, "offered")
		ch <- prometheus.MustNewConstMetric(clusterCPUsDesc, prometheus.GaugeValue, usedCPUs[n], n, "used")
		ch <- prometheus.MustNewConstMetric(clusterMemDesc, prometheus.GaugeValue, om, n, "offered")
		ch <- prometheus.MustNewConstMetric(clusterMemDesc, prometheus.GaugeValue, usedMem[n], n, "used")
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
