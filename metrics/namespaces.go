package metrics

import (
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/prometheus/client_golang/prometheus"
)

// nsLatenessBuckets reach past a minute: a fire held back by its
// namespace's limit, or by capacity lent to other namespaces' work, waits
// for runs to end (docs/tenancy.md).
var nsLatenessBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}

func newNamespaceLateness() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_namespace_fire_lateness_seconds",
		Help: "Per namespace: time from a cron fire's scheduled instant to the ACCEPT that launches its execution " +
			"(admitted: every shard of it is placed in that one round). A fire within the namespace's guarantee starts on time (docs/tenancy.md).",
		Buckets: nsLatenessBuckets}, []string{"namespace"})
}

// admitted observes a cron fire's lateness to its launch, in its job's
// namespace (namespaces are few: an admin creates each). Called with
// m.mu held.
func (m *Metrics) admitted(job string, fired, at time.Time) {
	late := max(at.Sub(fired), 0)
	m.nsLateness.WithLabelValues(namespace.Of(job)).Observe(late.Seconds())
	m.nsSeries.Fired(namespace.Of(job), late)
}

// NamespaceSeries is every namespace's usage over the last hour and the
// on-time count of its cron fires (the same fires the lateness histogram
// observes), for GET /api/namespaces/{name}/usage. The leader samples
// the usage into it (nsusage.Sampler).
func (m *Metrics) NamespaceSeries() *nsusage.Series { return m.nsSeries }
