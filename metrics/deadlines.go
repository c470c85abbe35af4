package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/observe"
)

// Deadlines counts missed deadlines and observes start estimates' errors
// (observe.Deadlines and observe.Estimates). The counter carries one series
// per job and kind that ever missed a deadline; the histograms one per
// namespace.
type Deadlines struct {
	missed   *prometheus.CounterVec
	errRatio *prometheus.HistogramVec
	errAbs   *prometheus.HistogramVec
}

var (
	_ observe.Deadlines = (*Deadlines)(nil)
	_ observe.Estimates = (*Deadlines)(nil)
)

// ratioBuckets: |estimated − actual start| over the wait (0.2 is the goal).
var ratioBuckets = []float64{.01, .02, .05, .1, .15, .2, .3, .5, 1, 2, 5}

// estimateBuckets: |estimated − actual start|, from a second to a day.
var estimateBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400}

func newDeadlines() *Deadlines {
	return &Deadlines{
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_deadline_missed_total",
			Help: "Deadlines missed (alerts raised once across leaders), by namespace, job and kind (start, run, runAt; a workflow's: job is the workflow, kind workflow_start, workflow_run, workflow_runAt)."},
			[]string{"namespace", "job", "kind"}),
		errRatio: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_start_estimate_error_ratio",
			Help: "Per namespace: |estimated − actual start| of a waiting execution over its wait, the first estimate given " +
				"once it began waiting, observed when it starts.", Buckets: ratioBuckets}, []string{"namespace"}),
		errAbs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_start_estimate_error_seconds",
			Help: "Per namespace: |estimated − actual start| of a waiting execution (its first estimate).", Buckets: estimateBuckets},
			[]string{"namespace"}),
	}
}

// Deadlines is the metrics' deadline sink.
func (m *Metrics) Deadlines() *Deadlines { return m.deadlines }

// DeadlineMissed counts an alert.
func (d *Deadlines) DeadlineMissed(a observe.DeadlineAlert, _ observe.Hook) {
	if a.Workflow != "" {
		d.missed.WithLabelValues(a.Namespace, a.Workflow, "workflow_"+string(a.Kind)).Inc()
		return
	}
	d.missed.WithLabelValues(a.Namespace, a.Job, string(a.Kind)).Inc()
}

// StartEstimateError observes an estimate's error.
func (d *Deadlines) StartEstimateError(ns string, abs time.Duration, ratio float64) {
	d.errRatio.WithLabelValues(ns).Observe(ratio)
	d.errAbs.WithLabelValues(ns).Observe(abs.Seconds())
}
