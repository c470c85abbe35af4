package main

import (
	"log/slog"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/flowengine"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/registry"
)

// workflowObserver is what the workflow engines of every term report to:
// the metrics (registered once per process) and, with history on, the
// history tables.
func workflowObserver(mx *metrics.Metrics, tw *trace.Writer) flowengine.Observer {
	m := flowengine.NewMetrics()
	mx.Register(m.Collectors()...)
	if tw == nil {
		return m
	}
	return flowengine.Observers{m, trace.NewWorkflowObserver(tw)}
}

// workflowEngine is a term's workflow engine: it writes through the term's
// fenced registry and kills through the term's guarded driver. Its crons
// fire from the term's one timetable (the scheduler's producer), which
// hands their fires back to it: Timetable is set once the scheduler is
// built (the two need each other).
func (l *leaderWork) workflowEngine(reg *registry.Registry, kill flowengine.Killer, log *slog.Logger) *flowengine.Engine {
	return flowengine.New(flowengine.Deps{Registry: reg, Killer: kill, Clock: clock.Real{}, Log: log.With("subsystem", "workflow"),
		Observer: l.flowObserver, Options: flowengine.Options{KeptRuns: l.cfg.WorkflowRunsKept}})
}
