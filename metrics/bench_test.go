package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/scheduler"
)

// BenchmarkPerTask is what the metrics add to one launched task on the
// scheduler's loop: its launch (counters, ready → ACCEPT, seen and accept
// stages, run bookkeeping), its TASK_RUNNING (decoding the executor's
// report: the agent, executor, fork and running stages) and its end
// (decoding the report for the run's duration). Figures: docs/benchmarks.md.
func BenchmarkPerTask(b *testing.B) {
	m := New()
	m.Leading(true)
	jobsN := 1000
	running := runningData(t0.Add(ms(1)), t0.Add(ms(2)), t0.Add(ms(3)))
	done := endData(3, 10)
	i := 0
	for b.Loop() {
		job := fmt.Sprint("job-", i%jobsN)
		ev := scheduler.TaskEvent{TaskID: fmt.Sprint("t", i), Job: job, Transient: true, Queued: t0, At: t0.Add(time.Millisecond)}
		m.TriggerCommitted(job, t0, t0)
		m.Launched(ev)
		ev.At = t0.Add(ms(4))
		m.StatusChanged(ev, mesos.Status{TaskID: ev.TaskID, State: "TASK_RUNNING", Data: running})
		m.StatusChanged(ev, mesos.Status{TaskID: ev.TaskID, State: "TASK_FINISHED", Data: done})
		i++
	}
}
