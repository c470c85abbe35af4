package trace

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

func ptr[T any](v T) *T { return &v }

// Rows come out column for column as the original wrote them, including
// the upsert cases: complete after start, complete without start, start
// after complete.
func TestWriteRowsMatchOriginalShapes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		tid := "job@-@1@-@FAILOVER@-@agent-1@-@u1"
		long := strings.Repeat("é", 4100) + "\xff"
		w.Record(StatusTrace{ID: "s1", JobName: "job", OriginalTaskID: "job@-@1@-@READY@-@agent-1@-@u0", TaskID: tid,
			SlaveID: "agent-1", Source: SourceScheduler, ExecutionType: ExecutionFailover, ShardingItem: "1",
			State: "TASK_STAGING", CreationTime: t0.Add(1234567 * time.Microsecond)})
		w.Record(StatusTrace{ID: "s2", JobName: "job", TaskID: tid, SlaveID: "agent-1", Source: SourceExecutor,
			ExecutionType: ExecutionFailover, ShardingItem: "1", State: "TASK_FAILED", Message: long, CreationTime: t0.Add(2 * time.Second)})
		w.Record(ExecutionStart{ID: "e1", JobName: "job", TaskID: tid, Hostname: "h1", IP: "10.0.0.1", ShardingItem: 1,
			ExecutionSource: "FAILOVER", StartTime: t0})
		w.Record(ExecutionComplete{ID: "e1", JobName: "job", TaskID: tid, Hostname: "h1", IP: "10.0.0.1", ShardingItem: 1,
			ExecutionSource: "FAILOVER", StartTime: t0, CompleteTime: t0.Add(3 * time.Second), Success: false, FailureCause: long})
		w.Record(ExecutionComplete{ID: "e2", JobName: "job", TaskID: "t2", Hostname: "h2", IP: "10.0.0.2", ShardingItem: 0,
			ExecutionSource: "NORMAL_TRIGGER", StartTime: t0, CompleteTime: t0.Add(time.Second), Success: true})
		mustFlush(t, w)
		// A start after its completion changes nothing; a success keeps no cause.
		w.Record(ExecutionStart{ID: "e2", JobName: "job", TaskID: "t2", Hostname: "other", IP: "x", ShardingItem: 0,
			ExecutionSource: "MISFIRE", StartTime: t0.Add(time.Hour)})
		w.Record(ExecutionStart{ID: "e3", JobName: "job", TaskID: "t3", Hostname: "h3", IP: "10.0.0.3", ShardingItem: 2,
			ExecutionSource: "MISFIRE", StartTime: t0})
		mustFlush(t, w)

		cause := strings.Repeat("é", 4000)
		wantTraces := []traceRow{
			{ID: "s1", JobName: "job", OriginalTaskID: "job@-@1@-@READY@-@agent-1@-@u0", TaskID: tid, SlaveID: "agent-1",
				Source: "CLOUD_SCHEDULER", ExecutionType: "FAILOVER", ShardingItem: "1", State: "TASK_STAGING", Message: ptr(""),
				CreationTime: t0.Add(1234 * time.Millisecond)},
			// original_task_id copied from the STAGING row, as the original did.
			{ID: "s2", JobName: "job", OriginalTaskID: "job@-@1@-@READY@-@agent-1@-@u0", TaskID: tid, SlaveID: "agent-1",
				Source: "CLOUD_EXECUTOR", ExecutionType: "FAILOVER", ShardingItem: "1", State: "TASK_FAILED", Message: &cause,
				CreationTime: t0.Add(2 * time.Second)},
		}
		if got := traces(t, w); !reflect.DeepEqual(got, wantTraces) {
			t.Errorf("traces\n got %+v\nwant %+v", got, wantTraces)
		}
		wantExecs := map[string]execRow{
			"e1": {ID: "e1", JobName: "job", TaskID: tid, Hostname: "h1", IP: "10.0.0.1", ShardingItem: 1, ExecutionSource: "FAILOVER",
				FailureCause: &cause, IsSuccess: 0, StartTime: ptr(t0), CompleteTime: ptr(t0.Add(3 * time.Second)), Result: ptr("FAILED")},
			"e2": {ID: "e2", JobName: "job", TaskID: "t2", Hostname: "h2", IP: "10.0.0.2", ShardingItem: 0, ExecutionSource: "NORMAL_TRIGGER",
				IsSuccess: 1, StartTime: ptr(t0), CompleteTime: ptr(t0.Add(time.Second)), Result: ptr("SUCCEEDED")},
			"e3": {ID: "e3", JobName: "job", TaskID: "t3", Hostname: "h3", IP: "10.0.0.3", ShardingItem: 2, ExecutionSource: "MISFIRE",
				IsSuccess: 0, StartTime: ptr(t0)},
		}
		if got := execs(t, w); !reflect.DeepEqual(got, wantExecs) {
			t.Errorf("executions\n got %+v\nwant %+v", got, wantExecs)
		}
		// Times compare with what TimeArg binds.
		var n int
		if err := db(t, w).Get(&n, "SELECT COUNT(*) FROM JOB_STATUS_TRACE_LOG WHERE creation_time >= ?", w.TimeArg(t0.Add(1500*time.Millisecond))); err != nil || n != 1 {
			t.Errorf("time range query: %d %v", n, err)
		}
		if d := w.Depth(); d != 0 || len(segments(t, w.opt.SpoolDir)) > 1 {
			t.Errorf("depth %d, segments %v", d, segments(t, w.opt.SpoolDir))
		}
	})
}

// Many events in batches smaller than the total; recording the same
// events again (a replay) adds no row.
func TestBatchesAndIdempotentReplay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t), BatchSize: 70, SegmentEvents: 100})
		evs := statusEvents("ev", 1000)
		for _, ev := range evs {
			w.Record(ev)
		}
		mustFlush(t, w)
		for _, ev := range evs[:500] {
			w.Record(ev)
		}
		mustFlush(t, w)
		if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != 1000 {
			t.Fatalf("%d rows, want 1000", n)
		}
		if got := testutilCounter(w.m.written); got != 1500 {
			t.Fatalf("written %v", got)
		}
		if segs := segments(t, w.opt.SpoolDir); len(segs) > 1 {
			t.Fatalf("written segments not removed: %v", segs)
		}
	})
}

// A partial batch is written FlushInterval after it was spooled, without
// Flush, and not a nanosecond sooner. In a synctest bubble: the writer's
// real clock is the bubble's, and synctest.Wait says its loop is parked
// on the flush timer.
func TestPartialBatchWrittenAfterFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db"), FlushInterval: time.Second, Clock: clock.Real{}})
		committed := make(chan int, 10)
		w.afterCommit = func(n int) { committed <- n }
		w.Record(statusEvents("p", 1)[0])
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		select {
		case n := <-committed:
			t.Fatalf("written (%d) before the flush interval", n)
		default:
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		select {
		case n := <-committed:
			if n != 1 {
				t.Fatalf("committed %d", n)
			}
		default:
			t.Fatal("not written after the flush interval")
		}
	})
}

// The database goes away mid-run (proxy cut): events accumulate in the
// spool (gauge), and are all written, once, when it returns.
func TestMySQLDownThenBack(t *testing.T) {
	dsn := testproxy.MySQL(t)
	proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
	w, _ := open(t, Options{Dialect: dialectMySQL, DSN: testproxy.Via(t, dsn, proxy.Addr()), BatchSize: 100, MaxMemory: 250,
		SegmentEvents: 200, WriteTimeout: 2 * time.Second})
	evs := statusEvents("down", 1500)
	for _, ev := range evs[:300] {
		w.Record(ev)
	}
	mustFlush(t, w)
	proxy.Set(testproxy.Refuse)
	for _, ev := range evs[300:] {
		w.Record(ev)
	}
	if err := w.Flush(ctxT(t)); err == nil {
		t.Fatal("Flush succeeded with the database down")
	}
	if d, g := w.Depth(), gaugeValue(t, w); d != 1200 || g != 1200 {
		t.Fatalf("depth %d, gauge %v, want 1200", d, g)
	}
	if segs := segments(t, w.opt.SpoolDir); len(segs) < 6 {
		t.Fatalf("segments %v", segs)
	}
	// A replay overlapping what is written must not duplicate either.
	for _, ev := range evs[:300] {
		w.Record(ev)
	}
	proxy.Set(testproxy.Forward)
	mustFlush(t, w)
	if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != 1500 {
		t.Fatalf("%d rows, want 1500", n)
	}
	if d, g := w.Depth(), gaugeValue(t, w); d != 0 || g != 0 {
		t.Fatalf("depth %d gauge %v after recovery", d, g)
	}
	if segs := segments(t, w.opt.SpoolDir); len(segs) > 1 {
		t.Fatalf("segments left %v", segs)
	}
}

// The retry timer (not Flush) brings the writer back: fake clock.
func TestRetryAfterBackoff(t *testing.T) {
	dsn := testproxy.MySQL(t)
	proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
	proxy.Set(testproxy.Refuse)
	w, clk := open(t, Options{Dialect: dialectMySQL, DSN: testproxy.Via(t, dsn, proxy.Addr()), RetryMin: time.Second})
	committed := make(chan int, 10)
	w.afterCommit = func(n int) { committed <- n }
	w.Record(statusEvents("r", 1)[0])
	if err := w.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	proxy.Set(testproxy.Forward)
	clk.Advance(time.Second)
	select {
	case <-committed:
	case <-time.After(failsafe):
		t.Fatal("not written after the retry delay")
	}
	if w.DB() == nil {
		t.Fatal("DB() nil after the schema was applied")
	}
}

// The scheduler starts while the database is down: Open succeeds, DB()
// reports unavailable, events spool, the schema is applied on return.
func TestOpenWhileDatabaseDown(t *testing.T) {
	dsn := testproxy.MySQL(t)
	proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
	proxy.Set(testproxy.Refuse)
	w, _ := open(t, Options{Dialect: dialectMySQL, DSN: testproxy.Via(t, dsn, proxy.Addr())})
	if w.DB() != nil {
		t.Fatal("DB() before the schema exists")
	}
	if _, err := w.QueryDB(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("QueryDB: %v", err)
	}
	var nilW *Writer
	if nilW.DB() != nil {
		t.Fatal("nil writer DB")
	}
	if _, err := nilW.QueryDB(); !errors.Is(err, ErrUnavailable) {
		t.Fatal("nil writer QueryDB")
	}
	for _, ev := range statusEvents("o", 10) {
		w.Record(ev)
	}
	if err := w.Flush(ctxT(t)); err == nil {
		t.Fatal("flushed with the database down")
	}
	proxy.Set(testproxy.Forward)
	mustFlush(t, w)
	if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != 10 {
		t.Fatalf("%d rows", n)
	}
}

// Close with the database down keeps the events in the spool; the next
// Open replays them first.
func TestRestartReplaysSpool(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		spool := filepath.Join(t.TempDir(), "spool")
		via := dsn
		if b.dialect == dialectSQLite { // short busy wait while the test holds the lock
			via = "file:" + dsn + "?_pragma=busy_timeout(100)&_pragma=journal_mode(WAL)&_txlock=immediate"
		}
		var proxy *testproxy.Proxy
		if b.dialect == dialectMySQL {
			proxy = testproxy.NewProxy(t, testproxy.Target(t, dsn))
			via = testproxy.Via(t, dsn, proxy.Addr())
		}
		w1, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool, SegmentEvents: 64})
		if err != nil {
			t.Fatal(err)
		}
		evs := statusEvents("restart", 500)
		for _, ev := range evs[:100] {
			w1.Record(ev)
		}
		mustFlush(t, w1)
		release := func() { proxy.Set(testproxy.Forward) }
		if proxy != nil {
			proxy.Set(testproxy.Refuse)
		} else {
			// SQLite cannot be cut off: hold its write lock instead.
			release = holdSQLiteWriteLock(t, dsn)
		}
		for _, ev := range evs[100:] {
			w1.Record(ev)
		}
		cctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		w1.Close(cctx)
		cancel()
		if len(segments(t, spool)) == 0 {
			t.Fatal("nothing spooled")
		}
		release()
		w2, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close(context.Background())
		mustFlush(t, w2)
		if n := count(t, w2, "JOB_STATUS_TRACE_LOG"); n != 500 {
			t.Fatalf("%d rows after restart, want 500", n)
		}
		if w2.Depth() != 0 || len(segments(t, spool)) > 1 {
			t.Fatalf("depth %d segments %v", w2.Depth(), segments(t, spool))
		}
	})
}

// Record never blocks, even while the database hangs (accepts connections
// and never answers): events go to the spool.
func TestRecordNeverBlocksWhenDatabaseHangs(t *testing.T) {
	dsn := testproxy.MySQL(t)
	proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
	proxy.Set(testproxy.Hang)
	w, err := Open(ctxT(t), Options{Dialect: dialectMySQL, DSN: testproxy.Via(t, dsn, proxy.Addr()),
		SpoolDir: filepath.Join(t.TempDir(), "spool"), ConnectTimeout: 100 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, ev := range statusEvents("hang", 20000) {
			w.Record(ev)
		}
	}()
	select {
	case <-done:
	case <-time.After(failsafe):
		t.Fatal("Record blocked while the database hangs")
	}
	if err := w.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if d := w.Depth(); d != 20000 {
		t.Fatalf("depth %d", d)
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	w.Close(cctx)
	// Everything is still there for the next run.
	proxy.Set(testproxy.Forward)
	w2, _ := open(t, Options{Dialect: dialectMySQL, DSN: testproxy.Via(t, dsn, proxy.Addr()), SpoolDir: w.opt.SpoolDir})
	mustFlush(t, w2)
	if n := count(t, w2, "JOB_STATUS_TRACE_LOG"); n != 20000 {
		t.Fatalf("%d rows", n)
	}
}

func TestSpoolDirIsExclusive(t *testing.T) {
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db")})
	_, err := Open(ctxT(t), Options{DSN: filepath.Join(t.TempDir(), "other.db"), SpoolDir: w.opt.SpoolDir})
	if !errors.Is(err, ErrSpoolLocked) {
		t.Fatalf("second writer on the same spool: %v", err)
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, opt := range []Options{
		{Dialect: "postgres", DSN: "x", SpoolDir: t.TempDir()},
		{DSN: "", SpoolDir: t.TempDir()},
		{DSN: "x"},
		{DSN: "x", SpoolDir: t.TempDir(), MaxAge: -1},
	} {
		if _, err := Open(ctxT(t), opt); err == nil {
			t.Errorf("Open(%+v) succeeded", opt)
		}
	}
}

// Record after Close is dropped and counted, never blocks or panics.
func TestRecordAfterClose(t *testing.T) {
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db")})
	w.Close(ctxT(t))
	w.Record(statusEvents("late", 1)[0])
	if got := testutilCounter(w.m.dropped); got != 1 {
		t.Fatalf("dropped %v", got)
	}
	if err := w.Flush(ctxT(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	// A caller that must know (the audit log) is told.
	if err := w.RecordDurable(ctxT(t), Audit{User: "late"}); !errors.Is(err, ErrDropped) {
		t.Fatalf("RecordDurable after Close: %v", err)
	}
	var nilW *Writer
	nilW.Record(statusEvents("nil", 1)[0])
	if err := nilW.RecordDurable(ctxT(t), Audit{}); err == nil {
		t.Fatal("RecordDurable on a nil writer succeeded")
	}
}

// TestSQLiteHistoryCheckpointsEveryWalCheckpointPages: the history's
// connections copy the log back every walCheckpointPages, not SQLite's
// default 1,000 (BenchmarkSQLiteManyJobs).
func TestSQLiteHistoryCheckpointsEveryWalCheckpointPages(t *testing.T) {
	db, err := openDB(dialectSQLite, filepath.Join(t.TempDir(), "trace.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages int
	if err := db.Get(&pages, "PRAGMA wal_autocheckpoint"); err != nil {
		t.Fatal(err)
	}
	if pages != walCheckpointPages {
		t.Fatalf("wal_autocheckpoint = %d, want %d", pages, walCheckpointPages)
	}
}
