package trace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// benchEvents is a realistic mix: per task, three status traces (STAGING,
// RUNNING, FINISHED), an execution start and its completion.
func benchEvents(n int) []Event { return benchEventsWith(n, TaskEventID, 1) }

// benchEventsWith names the rows with id (TaskEventID, or a name-based
// UUID that ignores the task's time), for tasks of jobCount jobs, which
// follow each other in a scattered order (a large cluster's jobs end in no
// particular order: their rows land all over the job-name and task-id
// indexes).
func benchEventsWith(n int, id func(taskID string, parts ...string) string, jobCount int) []Event {
	evs := make([]Event, 0, n+5)
	for i := 0; len(evs) < n; i++ {
		job := "bench-job"
		if jobCount > 1 {
			job = "bench-job-" + itoa((i*7919)%jobCount)
		}
		tid := job + "@-@" + itoa(i%100) + "@-@READY@-@agent-1@-@" + jobs.NewUUID()
		at := time.Now()
		for _, st := range []task.State{task.Staging, task.Running, task.Finished} {
			evs = append(evs, StatusTrace{ID: id(tid, tid, string(st)), JobName: job, TaskID: tid, SlaveID: "agent-1",
				Source: SourceScheduler, ExecutionType: ExecutionReady, ShardingItem: itoa(i % 100), State: st, CreationTime: at})
		}
		evs = append(evs,
			ExecutionStart{ID: id(tid, tid), JobName: job, TaskID: tid, Hostname: "host-1", IP: "10.0.0.1",
				ShardingItem: i % 100, ExecutionSource: "NORMAL_TRIGGER", StartTime: at},
			ExecutionComplete{ID: id(tid, tid), JobName: job, TaskID: tid, Hostname: "host-1", IP: "10.0.0.1",
				ShardingItem: i % 100, ExecutionSource: "NORMAL_TRIGGER", StartTime: at, CompleteTime: at, Success: true})
	}
	return evs[:n]
}

// BenchmarkSQLiteLargeHistory writes into a history that already holds
// 150,000 rows, with the row IDs the observer gives (time-ordered,
// TaskEventID) and with name-based UUIDs that scatter over the primary
// key's index (NewID, what every row got before): CPU per event, as the
// scheduler pays it.
func BenchmarkSQLiteLargeHistory(b *testing.B) {
	for _, v := range []struct {
		name string
		id   func(string, ...string) string
	}{{"time-ordered", TaskEventID}, {"name-based", func(_ string, parts ...string) string { return NewID(parts...) }}} {
		b.Run(v.name, func(b *testing.B) {
			benchWrite(b, dialectSQLite, filepath.Join(b.TempDir(), "trace.db"), benchEventsWith(150_000, v.id, 1),
				func(n int) []Event { return benchEventsWith(n, v.id, 1) })
		})
	}
}

// BenchmarkSQLiteManyJobs writes the tasks of 20,000 jobs, ending in a
// scattered order, into a history that already holds 300,000 rows of them:
// the simulated cluster's case, where the job-name and task-id indexes
// take each row on a different page.
func BenchmarkSQLiteManyJobs(b *testing.B) {
	const jobCount = 20_000
	benchWrite(b, dialectSQLite, filepath.Join(b.TempDir(), "trace.db"), benchEventsWith(300_000, TaskEventID, jobCount),
		func(n int) []Event { return benchEventsWith(n, TaskEventID, jobCount) })
}

// benchWrite measures sustained events/s from Record to committed rows
// (spool fsync included), reported as the "events/s" metric, and the
// process's CPU per event ("cpu-µs/event"), after writing prefill.
func benchWrite(b *testing.B, dialect, dsn string, prefill []Event, events func(n int) []Event) {
	w, err := Open(context.Background(), Options{Dialect: dialect, DSN: dsn, SpoolDir: filepath.Join(b.TempDir(), "spool"), Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	write := func(evs []Event) {
		for _, ev := range evs {
			w.Record(ev)
		}
		if err := w.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	write(prefill)
	evs := events(b.N)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	io0 := syscallCounts()
	b.ResetTimer()
	start := time.Now()
	write(evs)
	el := time.Since(start)
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if io0 >= 0 {
		b.ReportMetric(float64(syscallCounts()-io0)/float64(b.N), "rw-syscalls/event")
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
}

func BenchmarkWriteMySQL(b *testing.B) {
	benchWrite(b, dialectMySQL, testproxy.MySQL(b), nil, benchEvents)
}

func BenchmarkWriteSQLite(b *testing.B) {
	benchWrite(b, dialectSQLite, filepath.Join(b.TempDir(), "trace.db"), nil, benchEvents)
}

// syscallCounts is the process's read and write system calls so far
// (/proc/self/io: syscr + syscw), -1 where that is not available: on a
// machine where system calls are expensive, they are much of SQLite's cost.
func syscallCounts() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			n += c
		}
	}
	return n
}
