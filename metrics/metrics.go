// Package metrics exposes the scheduler's Prometheus metrics at /metrics:
// tasks launched, relaunched and ended by job, the launch path by stage
// (stages.go), runs (the failure streak and last duration by job,
// runs.go), the ready queue depth, offer counts, cron fire lateness, the
// ready-to-ACCEPT latency, leadership, and, read from the registry at
// scrape time, running tasks and their resources by job, queue depths and
// the age of the oldest waiting work (state.go).
//
// Label cardinality: the job label carries one value per job that
// launched (counters), ran (last duration), runs now (running tasks and
// resources) or fails (the streak, exported while above 0); no label
// carries task ids, agents or times. Job-labelled gauges are kept by the
// leader only: they are cleared when a term ends.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

// Metrics implements observe.Tasks and observe.Gauges (and observe.Daemons,
// observe.Waiting) on
// a private registry.
type Metrics struct {
	reg        *prometheus.Registry
	readyDepth prometheus.Gauge
	offers     *prometheus.CounterVec
	lateness   prometheus.Histogram
	nsLateness *prometheus.HistogramVec // per namespace: fire → admitted (namespaces.go)
	nsSeries   *nsusage.Series          // per namespace: usage over the last hour and fires on time (namespaces.go)
	toAccept   prometheus.Histogram
	leader     prometheus.Gauge
	terms      prometheus.Counter
	cacheLag   prometheus.Histogram
	stageHist  *prometheus.HistogramVec
	stages     stageObservers
	leading    atomic.Bool

	mu       sync.Mutex
	pend     map[string]pending   // job → its ready entry's commit (stages.go)
	accepted map[string]time.Time // task → when its ACCEPT was sent, until its first RUNNING
	runs     map[string]*jobRun   // job → its run in progress and failure streak (runs.go)
	jobs     map[string]jobCounts // job → its counters and last duration (jobs.go)

	waiting *prometheus.GaugeVec
	reasons map[string]bool // waiting reasons set so far (reset to 0 when they clear)

	deadlines *Deadlines // missed deadlines and start estimates (deadlines.go)

	// per cluster (clusters.go)
	launches  *prometheus.CounterVec
	offered   clusterOffers
	clusterMu sync.Mutex
	home      string                 // the home cluster: where an agent id naming none is
	connected func() map[string]bool // ObserveConnections

	rounds *roundMetrics // the launch rounds (rounds.go)
}

var (
	_ observe.Tasks         = (*Metrics)(nil)
	_ observe.Gauges        = (*Metrics)(nil)
	_ observe.Daemons       = (*Metrics)(nil)
	_ observe.ClusterOffers = (*Metrics)(nil)
	_ observe.Rounds        = (*Metrics)(nil)
	_ observe.StatusBatches = (*Metrics)(nil)
)

// fine buckets from 0.1 ms to 10 s, for latency targets in milliseconds.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .002, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New registers every metric (plus Go runtime and process collectors).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		readyDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "elasticjob_ready_queue_jobs",
			Help: "Jobs with pending executions in the ready queue."}),
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_offers_total",
			Help: "Resource offers, by what happened to them (received, declined)."}, []string{"outcome"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_fire_lateness_seconds",
			Help: "Time from a cron fire's scheduled instant to its ready-queue entry being committed.", Buckets: latencyBuckets}),
		toAccept: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_ready_to_accept_seconds",
			Help: "Time from work entering the ready or failover queue to the ACCEPT that launches it.", Buckets: latencyBuckets}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "elasticjob_leader",
			Help: "1 while this scheduler instance is the elected leader, else 0."}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{Name: "elasticjob_leader_terms_total",
			Help: "Leadership terms this instance began."}),
		cacheLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_registry_cache_lag_seconds",
			Help: "Time from a registry change's notification reaching this instance (ZooKeeper) to its registry copy reflecting it.", Buckets: latencyBuckets}),
		stageHist: newStageHistogram(),
		pend:      map[string]pending{},
		accepted:  map[string]time.Time{},
		runs:      map[string]*jobRun{},
		jobs:      map[string]jobCounts{},
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "elasticjob_waiting_entries",
			Help: "Ready executions and failover shards not launched in the last round, by reason (no_offers, insufficient_cpu, never_fits, execution_running, …)."}, []string{"reason"}),
		reasons: map[string]bool{},
		launches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_cluster_launches_total",
			Help: "Tasks launched, by the cluster they were launched on (one cluster is default)."}, []string{"cluster"}),
	}
	m.stages = newStageObservers(m.stageHist)
	m.nsLateness, m.nsSeries = newNamespaceLateness(), nsusage.New()
	m.deadlines = newDeadlines()
	m.rounds = newRoundMetrics()
	m.reg.MustRegister(m.deadlines.missed, m.deadlines.errRatio, m.deadlines.errAbs)
	m.reg.MustRegister(jobSeries{m}, m.readyDepth, m.offers, m.lateness, m.nsLateness, m.toAccept, m.leader, m.terms, m.cacheLag,
		m.stageHist, streaks{m}, m.waiting, m.launches, m.rounds.tasks, m.rounds.phases, m.rounds.running, m.rounds.batchUpdates, m.rounds.batchSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// CacheLag observes how long after its notification a registry change was
// in this instance's registry copy (store/cache.KV.ObserveLag).
func (m *Metrics) CacheLag(d time.Duration) { m.cacheLag.Observe(d.Seconds()) }

// Register adds more collectors (e.g. the trace writer's).
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Gatherer is the registry the metrics are served from.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// Launched counts a launch, its queue-to-ACCEPT latency and its stages.
func (m *Metrics) Launched(t observe.TaskEvent) {
	if !t.Queued.IsZero() {
		m.toAccept.Observe(t.At.Sub(t.Queued).Seconds())
	}
	m.launches.WithLabelValues(m.clusterOf(t.AgentID)).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count(t.Job, func(c *jobCounts) { c.launched++ })
	m.launchStages(t)
	m.runLaunched(t)
	if t.Late != "" {
		m.nsSeries.Late(namespace.Of(t.Job), nsusage.LateRun{Job: namespace.Name(t.Job), TaskID: t.TaskID, Due: t.Queued, At: t.At, Why: t.Late})
	}
}

// StatusChanged counts terminal states and runs, and observes the launch
// stages a task's TASK_RUNNING completes.
func (m *Metrics) StatusChanged(t observe.TaskEvent, st engine.Status) {
	terminal := st.State.Terminal()
	if st.State != task.Running && !terminal {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.State == task.Running {
		m.runningStages(t, st)
		return
	}
	m.count(t.Job, func(c *jobCounts) {
		switch st.State {
		case task.Finished:
			c.finished++
		case task.Killed:
			c.killed++
		default:
			c.failed++
		}
	})
	delete(m.accepted, t.TaskID)
	if t.Transient {
		m.runEnded(t, st)
	}
}

// Fired observes a cron fire's lateness; its commit starts the fire's
// launch stages.
func (m *Metrics) Fired(job string, scheduled, committed time.Time) {
	m.lateness.Observe(committed.Sub(scheduled).Seconds())
	m.noteCommitted(job, committed, scheduled)
}

// ReadyDepth sets the ready queue gauge.
func (m *Metrics) ReadyDepth(n int) { m.readyDepth.Set(float64(n)) }

// OffersSeen counts offers received and declined.
func (m *Metrics) OffersSeen(received, declined int) {
	if received > 0 {
		m.offers.WithLabelValues("received").Add(float64(received))
	}
	if declined > 0 {
		m.offers.WithLabelValues("declined").Add(float64(declined))
	}
}

// Leading records whether this instance leads (a term begins or ends).
// Either way what the last term followed is forgotten: the leader alone
// exports the job-labelled gauges.
func (m *Metrics) Leading(on bool) {
	m.mu.Lock()
	clear(m.pend)
	clear(m.accepted)
	clear(m.runs)
	for job, c := range m.jobs {
		if c.hasDuration {
			c.lastDuration, c.hasDuration = 0, false
			m.jobs[job] = c
		}
	}
	m.mu.Unlock()
	m.leading.Store(on)
	if on {
		m.leader.Set(1)
		m.terms.Inc()
		return
	}
	m.leader.Set(0)
	m.readyDepth.Set(0)
}

// streaks is the collector of the failure streaks (runs.go).
type streaks struct{ m *Metrics }

func (s streaks) Describe(ch chan<- *prometheus.Desc) { ch <- streakDesc }

func (s streaks) Collect(ch chan<- prometheus.Metric) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.collectStreaks(ch)
}

// Waiting sets how many queue entries wait, by reason (observe.Waiting).
func (m *Metrics) Waiting(byReason map[string]int) {
	for r := range m.reasons {
		if _, ok := byReason[r]; !ok {
			m.waiting.WithLabelValues(r).Set(0)
		}
	}
	for r, n := range byReason {
		m.reasons[r] = true
		m.waiting.WithLabelValues(r).Set(float64(n))
	}
}
