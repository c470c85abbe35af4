package flowengine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/workflow"
)

// Metrics counts runs started and finished and observes node hand-off
// times; an Observer whose collectors go on the scheduler's /metrics.
type Metrics struct {
	started  *prometheus.CounterVec
	finished *prometheus.CounterVec
	handoff  prometheus.Histogram
	lateness prometheus.Histogram
}

var _ FireObserver = (*Metrics)(nil)

// latenessBuckets are the job fires' (elasticjob_fire_lateness_seconds):
// 0.1 ms to 10 s, so the two read alike.
var latenessBuckets = []float64{.0001, .00025, .0005, .001, .002, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// handoffBuckets span 1 ms to 1 minute, fine below 50 ms.
var handoffBuckets = []float64{.001, .002, .003, .005, .0075, .01, .015, .02, .03, .05, .075, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics makes the workflow metrics (register Collectors()).
func NewMetrics() *Metrics {
	return &Metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_workflow_runs_started_total",
			Help: "Workflow runs (and retries of runs) that began, by source (CRON, API, BACKFILL)."}, []string{"source"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_workflow_runs_finished_total",
			Help: "Workflow runs that ended, by result (SUCCEEDED, FAILED, CANCELLED)."}, []string{"result"}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_workflow_node_handoff_seconds",
			Help:    "Time from the last upstream shard's end to the node's first task start.",
			Buckets: handoffBuckets}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_workflow_fire_lateness_seconds",
			Help:    "Time from a workflow cron fire's instant to its run's commit (fires of the term's instants).",
			Buckets: latenessBuckets}),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.started, m.finished, m.handoff, m.lateness}
}

// CronFired observes a cron fire's lateness.
func (m *Metrics) CronFired(instant, made time.Time) { m.lateness.Observe(made.Sub(instant).Seconds()) }

// RunChanged counts a run's start and end and observes the hand-off of
// each node that ended.
func (m *Metrics) RunChanged(prev, next workflow.Run) {
	if next.State == workflow.RunRunning && prev.State != workflow.RunRunning {
		m.started.WithLabelValues(next.Source).Inc()
	}
	if next.State.Final() && !prev.State.Final() {
		m.finished.WithLabelValues(string(next.State)).Inc()
	}
	for _, n := range workflow.Ended(prev, next) {
		if d, ok := workflow.Handoff(next, n); ok {
			m.handoff.Observe(d.Seconds())
		}
	}
}

// Observers combines observers.
type Observers []Observer

// RunChanged tells every observer.
func (o Observers) RunChanged(prev, next workflow.Run) {
	for _, x := range o {
		x.RunChanged(prev, next)
	}
}

// CronFired tells every observer that hears fires.
func (o Observers) CronFired(instant, made time.Time) {
	for _, x := range o {
		if f, ok := x.(FireObserver); ok {
			f.CronFired(instant, made)
		}
	}
}
