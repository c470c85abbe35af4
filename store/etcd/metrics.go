package etcd

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newCommitHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "elasticjob_store_commit_seconds",
		Help:    "Duration of one registry commit on the replicated store (planning read, transactions, retries).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
}

func (s *Store) observeCommit(start time.Time) {
	s.commitSeconds.Observe(time.Since(start).Seconds())
}

// Collectors are the store's own metrics: the commit latency histogram
// and the commits' shapes.
func (s *Store) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.commitSeconds, s.shapes}
}

// ClusterCollector reports the cluster's members at every scrape (one
// status request per member, bounded by Probe, 2 s in all): health,
// leadership, raft index, store size and in-use size, alarms, and the
// leader changes it has seen between scrapes. The embedded member's own
// etcd_* series (WAL fsync and backend commit latency, quota, its count
// of leader changes) are in Prometheus' default registry.
type ClusterCollector struct {
	a       *Admin
	mu      sync.Mutex
	leader  string
	changes float64
}

// NewClusterCollector returns the collector of a's cluster.
func NewClusterCollector(a *Admin) *ClusterCollector { return &ClusterCollector{a: a} }

var (
	descMembers = prometheus.NewDesc("elasticjob_store_members", "Members of the replicated store's cluster.", nil, nil)
	descHealthy = prometheus.NewDesc("elasticjob_store_member_healthy", "1 when the member answered its status request.", []string{"member"}, nil)
	descLeader  = prometheus.NewDesc("elasticjob_store_member_leader", "1 for the member that leads the raft cluster.", []string{"member"}, nil)
	descIndex   = prometheus.NewDesc("elasticjob_store_member_raft_index", "The member's raft index.", []string{"member"}, nil)
	descSize    = prometheus.NewDesc("elasticjob_store_db_size_bytes", "The member's backend file size.", []string{"member"}, nil)
	descInUse   = prometheus.NewDesc("elasticjob_store_db_size_in_use_bytes", "Bytes of the member's backend in use (the rest defragmentation frees).", []string{"member"}, nil)
	descAlarm   = prometheus.NewDesc("elasticjob_store_alarm", "1 while an alarm (NOSPACE: the quota is reached, writes refused; CORRUPT) is raised on the member.", []string{"member", "alarm"}, nil)
	descChanges = prometheus.NewDesc("elasticjob_store_leader_changes_total", "Raft leader changes seen between scrapes.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *ClusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMembers, descHealthy, descLeader, descIndex, descSize, descInUse, descAlarm, descChanges} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ClusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sts, err := c.a.Statuses(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descMembers, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	gauge(descMembers, float64(len(sts)))
	leader := ""
	for _, st := range sts {
		name := cmpOr(st.Name, st.ID)
		gauge(descHealthy, b(st.Healthy), name)
		gauge(descLeader, b(st.Leader), name)
		if st.Leader {
			leader = st.ID
		}
		if st.Healthy {
			gauge(descIndex, float64(st.RaftIndex), name)
			gauge(descSize, float64(st.DBSize), name)
			gauge(descInUse, float64(st.DBInUse), name)
		}
		for _, al := range st.Alarms {
			gauge(descAlarm, 1, name, al)
		}
	}
	c.mu.Lock()
	if leader != "" && c.leader != "" && leader != c.leader {
		c.changes++
	}
	if leader != "" {
		c.leader = leader
	}
	n := c.changes
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, n)
}

// MemberGatherer serves the embedded members' own series: etcd registers
// them (etcd_disk_wal_fsync_duration_seconds,
// etcd_disk_backend_commit_duration_seconds,
// etcd_server_leader_changes_seen_total, etcd_server_quota_backend_bytes,
// etcd_mvcc_db_total_size_in_bytes, …) in Prometheus' default registry.
// It keeps the etcd_ families of that registry only, so it merges with the
// scheduler's own registry (prometheus.Gatherers) without duplicating
// its Go and process series.
func MemberGatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := prometheus.DefaultGatherer.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "etcd_") {
				out = append(out, mf)
			}
		}
		return out, err
	})
}

// Commit shapes counted by elasticjob_store_commit_shapes_total (shape
// label): how each transaction a commit sent went, so that a slow
// registry shows whether its commits fit one flat transaction or
// contended for the guard (lock.go).
const (
	shapeFlat     = "flat"      // one transaction with its compares
	shapeGuarded  = "guarded"   // conditional on the guard (nested or a chain link)
	shapeReplan   = "replanned" // compares failed: planned again
	shapeLost     = "lost"      // a guarded attempt another commit came before
	shapeLocked   = "locked"    // the commit took the guard for itself
	shapeWaited   = "waited"    // the commit waited while another held the guard
	shapeReadOnly = "read_only" // nothing to write (checks only)
	// shapeLocalMissed: a commit planned from a local snapshot
	// (Options.LocalPlans) that it could not decide alone, planned again
	// from a fresh one.
	shapeLocalMissed = "local_missed"
)

func newShapeCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "elasticjob_store_commit_shapes_total",
		Help: "Transactions and waits of registry commits on the replicated store, by shape: flat, guarded, replanned, lost, locked, waited, read_only, local_missed.",
	}, []string{"shape"})
}

func (s *Store) count(shape string) { s.shapes.WithLabelValues(shape).Inc() }
