package trace

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/scheduler/trace/tracetest"
)

// benchEvents is a realistic mix: per task, three status traces (STAGING,
// RUNNING, FINISHED), an execution start and its completion.
func benchEvents(n int) []Event {
	evs := make([]Event, 0, n+5)
	for i := 0; len(evs) < n; i++ {
		tid := "bench-job@-@" + itoa(i%100) + "@-@READY@-@agent-1@-@" + RandomID()
		at := time.Now()
		for _, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
			evs = append(evs, StatusTrace{ID: NewID(tid, st), JobName: "bench-job", TaskID: tid, SlaveID: "agent-1",
				Source: SourceScheduler, ExecutionType: ExecutionReady, ShardingItem: itoa(i % 100), State: st, CreationTime: at})
		}
		evs = append(evs,
			ExecutionStart{ID: NewID(tid), JobName: "bench-job", TaskID: tid, Hostname: "host-1", IP: "10.0.0.1",
				ShardingItem: i % 100, ExecutionSource: "NORMAL_TRIGGER", StartTime: at},
			ExecutionComplete{ID: NewID(tid), JobName: "bench-job", TaskID: tid, Hostname: "host-1", IP: "10.0.0.1",
				ShardingItem: i % 100, ExecutionSource: "NORMAL_TRIGGER", StartTime: at, CompleteTime: at, Success: true})
	}
	return evs[:n]
}

// benchWrite measures sustained events/s from Record to committed rows
// (spool fsync included), reported as the "events/s" metric.
func benchWrite(b *testing.B, dialect, dsn string) {
	w, err := Open(context.Background(), Options{Dialect: dialect, DSN: dsn, SpoolDir: filepath.Join(b.TempDir(), "spool"), Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	evs := benchEvents(b.N)
	b.ResetTimer()
	start := time.Now()
	for _, ev := range evs {
		w.Record(ev)
	}
	if err := w.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
}

func BenchmarkWriteMySQL(b *testing.B) { benchWrite(b, dialectMySQL, tracetest.MySQL(b)) }

func BenchmarkWriteSQLite(b *testing.B) {
	benchWrite(b, dialectSQLite, filepath.Join(b.TempDir(), "trace.db"))
}
