package metrics

import (
	"context"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/prometheus/client_golang/prometheus"
)

var damagedDesc = prometheus.NewDesc("elasticjob_registry_damaged_entries",
	"Stored values that do not decode, set aside so the rest keeps scheduling (GET /api/registry/damaged lists them), by subtree.",
	[]string{"subtree"}, nil)

// damaged is the collector of the registry's damaged entries.
type damaged struct{ reg *registry.Registry }

// ObserveDamaged exports, at each scrape, how many entries reg's tracker
// holds set aside, by subtree (each read again first, so a removed or
// repaired one leaves the count). Every instance exports its own: the
// leader's count is the one to alert on (it scans the whole registry
// 30 s into each term).
func (m *Metrics) ObserveDamaged(reg *registry.Registry) {
	m.Register(damaged{reg})
}

func (d damaged) Describe(ch chan<- *prometheus.Desc) { ch <- damagedDesc }

func (d damaged) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	_ = d.reg.Recheck(ctx) // a read that fails leaves the entries as they were
	for subtree, n := range d.reg.Damage().Counts() {
		ch <- prometheus.MustNewConstMetric(damagedDesc, prometheus.GaugeValue, float64(n), subtree)
	}
}
