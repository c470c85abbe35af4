package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/observe"
)

// roundMetrics follow the launch rounds (observe.Rounds): how many, how many tasks each
// placed by the clusters it could place on, and where the loop's time went.
type roundMetrics struct {
	tasks   *prometheus.HistogramVec
	phases  *prometheus.HistogramVec
	running prometheus.Gauge
	// the status updates' batches: updates in each, and its time on the loop
	batchUpdates, batchSeconds prometheus.Histogram
	byPhase                    [5]prometheus.Observer // view, decide, commit, accept, other
}

// roundTaskBuckets span a round of one task to the store's bound of a round (8,192).
var roundTaskBuckets = []float64{0, 1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192}

func newRoundMetrics() *roundMetrics {
	r := &roundMetrics{
		tasks: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_launch_round_tasks",
			Help: "Tasks each launch round launched, by how many clusters it could place on (clusters with offers in its view; 0: none). " +
				"Its count is the rounds, its sum the tasks (docs/operations.md, Metrics).",
			Buckets: roundTaskBuckets}, []string{"clusters"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_launch_round_seconds",
			Help:    "Where each launch round's time on the scheduler's loop went, by phase: view, decide, commit, accept (waiting for ACCEPTs on the loop), other.",
			Buckets: latencyBuckets}, []string{"phase"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "elasticjob_launch_round_running_tasks",
			Help: "Tasks running in the last launch round's view (launches whose ACCEPT is in flight included)."}),
		batchUpdates: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_status_batch_updates",
			Help:    "Status updates the loop handled and committed together, per batch (its count is the batches, each one commit and one sync of the history).",
			Buckets: roundTaskBuckets}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_status_batch_seconds",
			Help:    "A batch of status updates' time on the loop: handled, the history synced, committed.",
			Buckets: latencyBuckets}),
	}
	for i, p := range []string{"view", "decide", "commit", "accept", "other"} {
		r.byPhase[i] = r.phases.WithLabelValues(p)
	}
	return r
}

// Round observes one launch round (observe.Rounds).
func (m *Metrics) Round(r observe.Round) {
	m.rounds.tasks.WithLabelValues(strconv.Itoa(r.Clusters)).Observe(float64(r.Tasks))
	for i, d := range [...]float64{r.View.Seconds(), r.Decide.Seconds(), r.Commit.Seconds(), r.Accept.Seconds(), r.Other.Seconds()} {
		m.rounds.byPhase[i].Observe(d)
	}
	m.rounds.running.Set(float64(r.Running))
}

// StatusBatch observes one batch of status updates (observe.StatusBatches).
func (m *Metrics) StatusBatch(updates int, took time.Duration) {
	m.rounds.batchUpdates.Observe(float64(updates))
	m.rounds.batchSeconds.Observe(took.Seconds())
}
