package main

import (
	"log/slog"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/history/webhook"
	"github.com/ejcloud/elasticjob/leader"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
)

// deadlineSinks are told of each missed deadline: the metric, the history
// (when kept) and the job's webhook.
func deadlineSinks(mx *metrics.Metrics, tw *trace.Writer, hooks *webhook.Sender) []observe.Deadlines {
	sinks := []observe.Deadlines{mx.Deadlines()}
	if tw != nil {
		sinks = append(sinks, trace.Deadlines{W: tw})
	}
	return append(sinks, hooks)
}

// deadlineLoop is the term's deadline watcher: alerts of missed deadlines,
// and the start estimates' errors.
func (l *leaderWork) deadlineLoop(reg *registry.Registry, inv engine.Inventory, log *slog.Logger) leader.Loop {
	w := &deadline.Watcher{Registry: reg, Clock: clock.Real{}, Log: log.With("subsystem", "deadlines"), Location: l.cfg.Location,
		Sinks: l.deadlineSinks, Estimates: l.mx.Deadlines(), Typical: l.typicals(reg), Inventory: inv, Catalog: l.catalog}
	return leader.Loop{Name: "deadlines", Run: w.Run}
}

// typicals reads jobs' recent run durations from history for start
// estimates (nil without history: estimates from timeouts only).
func (l *leaderWork) typicals(reg *registry.Registry) *deadline.TypicalCache {
	recent := l.recentRuns(reg)
	if recent == nil {
		return nil
	}
	return &deadline.TypicalCache{Source: recent, Clock: clock.Real{}}
}
