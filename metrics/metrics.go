// Package metrics exposes the scheduler's Prometheus metrics at /metrics:
// tasks launched, finished and failed by job, the ready queue depth, offer
// counts, cron fire lateness and the ready-to-ACCEPT latency.
package metrics

import (
	"net/http"
	"time"

	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics implements scheduler.Observer on a private registry.
type Metrics struct {
	reg        *prometheus.Registry
	launched   *prometheus.CounterVec
	ended      *prometheus.CounterVec
	readyDepth prometheus.Gauge
	offers     *prometheus.CounterVec
	lateness   prometheus.Histogram
	toAccept   prometheus.Histogram
	leader     prometheus.Gauge
	terms      prometheus.Counter
	waiting    *prometheus.GaugeVec
	reasons    map[string]bool // reasons set so far (reset to 0 when they clear)
}

var _ scheduler.Observer = (*Metrics)(nil)

// fine buckets from 0.1 ms to 10 s, for latency targets in milliseconds.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .002, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New registers every metric (plus Go runtime and process collectors).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		launched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_tasks_launched_total",
			Help: "Tasks launched, by job."}, []string{"job"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_tasks_ended_total",
			Help: "Tasks that reached a terminal state, by job and result (finished, failed, killed)."}, []string{"job", "result"}),
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
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "elasticjob_waiting_entries",
			Help: "Ready executions and failover shards not launched in the last round, by reason (no_offers, insufficient_cpu, never_fits, execution_running, …)."}, []string{"reason"}),
		reasons: map[string]bool{},
	}
	m.reg.MustRegister(m.launched, m.ended, m.readyDepth, m.offers, m.lateness, m.toAccept, m.leader, m.terms, m.waiting,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds more collectors (e.g. the trace writer's).
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// Launched counts a launch and its queue-to-ACCEPT latency.
func (m *Metrics) Launched(t scheduler.TaskEvent) {
	m.launched.WithLabelValues(t.Job).Inc()
	if !t.Queued.IsZero() {
		m.toAccept.Observe(t.At.Sub(t.Queued).Seconds())
	}
}

// StatusChanged counts terminal states.
func (m *Metrics) StatusChanged(t scheduler.TaskEvent, st mesos.Status) {
	switch {
	case st.State == "TASK_FINISHED":
		m.ended.WithLabelValues(t.Job, "finished").Inc()
	case st.State == "TASK_KILLED":
		m.ended.WithLabelValues(t.Job, "killed").Inc()
	case scheduler.IsTerminal(st.State):
		m.ended.WithLabelValues(t.Job, "failed").Inc()
	}
}

// Fired observes a cron fire's lateness.
func (m *Metrics) Fired(_ string, scheduled, committed time.Time) {
	m.lateness.Observe(committed.Sub(scheduled).Seconds())
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
func (m *Metrics) Leading(on bool) {
	if on {
		m.leader.Set(1)
		m.terms.Inc()
		return
	}
	m.leader.Set(0)
}

// Waiting sets how many queue entries wait, by reason (scheduler.WaitingObserver).
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
