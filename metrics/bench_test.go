package metrics

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/observe"
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
		ev := observe.TaskEvent{TaskID: fmt.Sprint("t", i), Job: job, Transient: true, Queued: t0, At: t0.Add(time.Millisecond)}
		m.TriggerCommitted(job, t0, t0)
		m.Launched(ev)
		ev.At = t0.Add(ms(4))
		m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: "TASK_RUNNING", Data: running})
		m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: "TASK_FINISHED", Data: done})
		i++
	}
}

// BenchmarkJobSeriesHeap is the heap the per-job state keeps (the
// job-labelled series, and the launch stages' pending entry): 100,000 jobs
// that each had a trigger committed, launched, finished and set a last
// duration. Reported: live heap bytes per job after a GC ("heap-B/job").
func BenchmarkJobSeriesHeap(b *testing.B) {
	const jobsN = 100_000
	done := endData(3, 10)
	names := make([]string, jobsN)
	for i := range names {
		names[i] = fmt.Sprint("job-", i)
	}
	var perJob float64
	for b.Loop() {
		before := heapbench.Live()
		m := New()
		m.Leading(true)
		for i, job := range names {
			ev := observe.TaskEvent{TaskID: fmt.Sprint("t", i), Job: job, Transient: true, Queued: t0, At: t0}
			m.TriggerCommitted(job, t0, t0)
			m.Launched(ev)
			m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: "TASK_FINISHED", Data: done})
		}
		perJob = float64(heapbench.Live()-before) / jobsN
		runtime.KeepAlive(m)
	}
	b.ReportMetric(perJob, "heap-B/job")
}
