package trace

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	spooled, pending, dbUp           prometheus.Gauge
	written, failed, dropped         prometheus.Counter
	spoolErrors, retained, writeErrs prometheus.Counter
}

func newMetrics() *metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &metrics{
		spooled: g("elasticjob_trace_spool_events", "Trace events in the on-disk spool, not yet in the history database."),
		pending: g("elasticjob_trace_pending_events", "Trace events recorded, waiting to be spooled."),
		dbUp:    g("elasticjob_trace_db_up", "1 when the last use of the history database succeeded."),
		written: c("elasticjob_trace_events_written_total", "Trace events written to the history database."),
		failed: c("elasticjob_trace_events_failed_total",
			"Trace events set aside: refused by the database for their data, or unreadable in the spool."),
		dropped: c("elasticjob_trace_events_dropped_total",
			"Trace events dropped because too many waited for the disk, or recorded after Close."),
		spoolErrors: c("elasticjob_trace_spool_errors_total", "Failed spool writes (the events were kept in memory)."),
		retained:    c("elasticjob_trace_retention_deleted_total", "History rows deleted by retention."),
		writeErrs:   c("elasticjob_trace_write_errors_total", "Failed batch writes to the history database."),
	}
}

// Collectors are the writer's Prometheus metrics: the spool depth gauge
// (elasticjob_trace_spool_events), events pending, database up, and
// written, failed, dropped, spool error, retention and write error
// counters.
func (w *Writer) Collectors() []prometheus.Collector {
	m := w.m
	return []prometheus.Collector{m.spooled, m.pending, m.dbUp, m.written, m.failed, m.dropped, m.spoolErrors, m.retained, m.writeErrs}
}
