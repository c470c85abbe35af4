package trace

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/migrations"
)

// history records, for each of days 0..29 before now, one status trace, one
// completed execution and one audit row, and adds one TASK_RUNNING_STATISTICS row a day.
func history(t *testing.T, w *Writer, now time.Time) {
	t.Helper()
	for d := range 30 {
		at := now.Add(-time.Duration(d)*24*time.Hour - time.Minute)
		w.Record(StatusTrace{ID: NewID("ret-s", itoa(d)), JobName: "j", TaskID: "t" + itoa(d), State: "TASK_RUNNING", CreationTime: at})
		w.Record(ExecutionComplete{ID: NewID("ret-e", itoa(d)), JobName: "j", TaskID: "t" + itoa(d), StartTime: at, CompleteTime: at, Success: true})
		w.Record(Audit{ID: NewID("ret-a", itoa(d)), User: "root", Role: "admin", Method: "POST", Route: "/api/job/trigger", Status: 204, CreationTime: at})
		if _, err := db(t, w).Exec("INSERT INTO "+migrations.TableTaskRunningStatistics+
			" (running_count, statistics_time, creation_time) VALUES (?, ?, ?)", d, w.TimeArg(at), w.TimeArg(at)); err != nil {
			t.Fatal(err)
		}
	}
	// A completion whose start was never known is aged by its completion.
	old := now.Add(-40 * 24 * time.Hour)
	w.Record(ExecutionComplete{ID: "orphan", JobName: "j", TaskID: "t-orphan", CompleteTime: old})
	mustFlush(t, w)
}

func oldest(t *testing.T, w *Writer, table, col string) time.Time {
	t.Helper()
	var s []time.Time
	if err := db(t, w).Select(&s, "SELECT "+col+" FROM "+table+" WHERE "+col+" IS NOT NULL ORDER BY "+col+" LIMIT 1"); err != nil || len(s) != 1 {
		t.Fatalf("oldest %s: %v", table, err)
	}
	return s[0].UTC()
}

func TestRetentionByAge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, clk := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t), MaxAge: 7 * 24 * time.Hour, RetentionBatch: 4})
		history(t, w, clk.Now())
		n, err := w.Retain(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		// 23 days too old in each of four tables, plus the orphan.
		if n != 4*23+1 {
			t.Fatalf("deleted %d", n)
		}
		cutoff := clk.Now().Add(-7 * 24 * time.Hour)
		for _, c := range []struct{ table, col string }{{"JOB_STATUS_TRACE_LOG", "creation_time"},
			{"JOB_EXECUTION_LOG", "start_time"}, {migrations.TableTaskRunningStatistics, "statistics_time"}, {migrations.TableAuditLog, "creation_time"}} {
			if got := count(t, w, c.table); got != 7 {
				t.Errorf("%s: %d rows, want 7", c.table, got)
			}
			if o := oldest(t, w, c.table, c.col); o.Before(cutoff) {
				t.Errorf("%s keeps %v, older than %v", c.table, o, cutoff)
			}
		}
		if got := testutilCounter(w.m.retained); got != float64(n) {
			t.Fatalf("retained counter %v", got)
		}
	})
}

func TestRetentionByRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, clk := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t), MaxRows: 10, RetentionBatch: 3})
		history(t, w, clk.Now())
		if _, err := w.Retain(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ table, col string }{{"JOB_STATUS_TRACE_LOG", "creation_time"},
			{"JOB_EXECUTION_LOG", "start_time"}, {migrations.TableTaskRunningStatistics, "statistics_time"}, {migrations.TableAuditLog, "creation_time"}} {
			if got := count(t, w, c.table); got != 10 {
				t.Errorf("%s: %d rows, want 10", c.table, got)
			}
			// The newest ten stay: the oldest kept is from 9 days ago.
			if o := oldest(t, w, c.table, c.col); !o.Equal(clk.Now().Add(-9*24*time.Hour - time.Minute)) {
				t.Errorf("%s: oldest kept %v", c.table, o)
			}
		}
	})
}

// The loop runs retention every RetentionInterval (fake clock).
func TestRetentionRunsOnSchedule(t *testing.T) {
	w, clk := open(t, Options{DSN: t.TempDir() + "/trace.db", MaxAge: 7 * 24 * time.Hour, RetentionInterval: 5 * time.Minute})
	ran := make(chan struct{}, 1)
	w.mu.Lock()
	w.retentionHook = func() { ran <- struct{}{} }
	w.mu.Unlock()
	history(t, w, clk.Now()) // its Flush is served by the loop: its timers exist
	clk.Advance(5 * time.Minute)
	select {
	case <-ran:
	case <-time.After(failsafe):
		t.Fatal("retention did not run")
	}
	if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != 7 {
		t.Fatalf("%d traces after scheduled retention", n)
	}
}
