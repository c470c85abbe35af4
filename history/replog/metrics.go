package replog

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	published, applied, pruned, bounded, bad, gaps prometheus.Counter
	position, entries                              prometheus.Gauge
	commit                                         prometheus.Histogram
}

func newMetrics() *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return &metrics{
		published: c("elasticjob_history_log_published_events_total", "History events this replica appended to the replicated log."),
		applied:   c("elasticjob_history_log_applied_events_total", "History events this replica applied from the log to its database."),
		pruned:    c("elasticjob_history_log_pruned_entries_total", "Log entries this replica deleted (applied by every replica, or past the bound)."),
		bounded:   c("elasticjob_history_log_bound_pruned_entries_total", "Log entries deleted past MaxEntries, perhaps before every replica applied them."),
		bad:       c("elasticjob_history_log_bad_entries_total", "Log entries that could not be decoded."),
		gaps:      c("elasticjob_history_log_gaps_total", "Times this replica found entries it had not applied pruned by the bound."),
		position:  g("elasticjob_history_log_applied_revision", "The store revision up to which this replica applied the log."),
		entries:   g("elasticjob_history_log_entries", "Entries in the log at the last prune."),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "elasticjob_history_log_append_seconds",
			Help: "Time to append one entry to the log (one replicated etcd commit).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
}

// Collectors are the log's Prometheus metrics.
func (l *Log) Collectors() []prometheus.Collector {
	m := l.m
	return []prometheus.Collector{m.published, m.applied, m.pruned, m.bounded, m.bad, m.gaps, m.position, m.entries, m.commit}
}
