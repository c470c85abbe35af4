package main

import (
	"log/slog"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// simRecorder appends each simulated task's start and end to a run log
// (--sim-record FILE), as the fault soak's checker reads it.
func simRecorder(w *runlog.Writer, log *slog.Logger) func(embedded.SimEvent) {
	return func(ev embedded.SimEvent) {
		l := runlog.Line{Ev: runlog.End, At: ev.At.UTC(), Task: ev.TaskID, State: ev.State}
		if ev.Start {
			var err error
			if l, err = runlog.FromTaskData(ev.TaskID, ev.At, ev.Data); err != nil {
				log.Warn("sim record: task data", "task_id", ev.TaskID, "err", err)
				l = runlog.Line{Ev: runlog.Start, At: ev.At.UTC(), Task: ev.TaskID}
			}
		}
		if err := w.Append(l); err != nil {
			log.Warn("sim record", "err", err)
		}
	}
}
