package scheduler

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

// journalBehind stands for the trace writer's journal before it has run:
// what the observer records reaches the real writer (its spool, on disk)
// only when Sync asks for it. That is the writer's own state for the few
// milliseconds between Record and its group fsync; here it lasts until the
// scheduler waits for the history, so a test sees the worst timing every
// time.
type journalBehind struct {
	w    *trace.Writer
	mu   sync.Mutex
	held []trace.Event
}

func (j *journalBehind) Record(ev trace.Event) {
	j.mu.Lock()
	j.held = append(j.held, ev)
	j.mu.Unlock()
}

func (j *journalBehind) Sync(ctx context.Context) error {
	j.mu.Lock()
	held := j.held
	j.held = nil
	j.mu.Unlock()
	for _, ev := range held {
		j.w.Record(ev)
	}
	return j.w.Sync(ctx)
}

func (j *journalBehind) Dropped() uint64 { return j.w.Dropped() }

// historyBackend opens a history database for a test: SQLite in a temp
// dir, or a fresh MariaDB database (scripts/services.sh).
type historyBackend struct {
	name, dialect string
	dsn           func(t *testing.T) string
}

var historyBackends = []historyBackend{
	{"sqlite", "sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "trace.db") }},
	{"mysql", "mysql", func(t *testing.T) string { return testproxy.MySQL(t) }},
}

// TestAcknowledgedUpdateHistorySurvivesAKill: once a task's end is
// acknowledged to the engine, its history completion is on disk, so a
// kill -9 of the leader right after the acknowledgement loses nothing: the
// spool as it stood at that instant, replayed by the next start, writes
// the completed execution row (else tasks that ended just before the
// leader's kill -9 have no completion). The crash is taken at
// the acknowledgement itself: the spool directory is copied as it is
// then, and a new writer opened on the copy replays it, on each backend.
func TestAcknowledgedUpdateHistorySurvivesAKill(t *testing.T) {
	for _, b := range historyBackends {
		for _, behind := range []bool{true, false} {
			name := b.name + "/writer"
			if behind {
				name = b.name + "/journal-behind"
			}
			t.Run(name, func(t *testing.T) { ackedHistorySurvives(t, b, behind) })
		}
	}
}

// ackedHistorySurvives runs TestAcknowledgedUpdateHistorySurvivesAKill on
// the writer itself (its journal may or may not have run by the
// acknowledgement: without the barrier this fails most of the time) or
// behind journalBehind (it has not: without the barrier it always fails).
func ackedHistorySurvives(t *testing.T, b historyBackend, behind bool) {
	r := newRig(t)
	dir := t.TempDir()
	tw := openTrace(t, b.dialect, b.dsn(t), filepath.Join(dir, "spool"))
	var rec trace.Recorder = tw
	if behind {
		rec = &journalBehind{w: tw}
	}
	r.rebuild(func(d *Deps) { d.Tasks = trace.Tee(trace.NewObserver(rec, nil)) })
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	id := r.running("job")[0].TaskID

	crashed := filepath.Join(dir, "crashed")
	var acked []task.State
	for _, state := range []task.State{task.Running, task.Finished} {
		r.sched.updates = append(r.sched.updates, pendingUpdate{
			st: engine.Status{TaskID: id, AgentID: "agent-1", State: state},
			done: func(ok bool) {
				if !ok {
					return
				}
				acked = append(acked, state)
				if state == task.Finished { // kill -9 here: the spool is what is on disk now
					copyDir(t, filepath.Join(dir, "spool"), crashed)
				}
			},
		})
	}
	r.sched.handleUpdates(r.ctx)
	if len(acked) != 2 {
		t.Fatalf("acknowledged %v, want both updates", acked)
	}

	next := openTrace(t, b.dialect, b.dsn(t), crashed) // the next start replays the spool
	if err := next.Flush(r.ctx); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Success  int     `db:"is_success"`
		Complete *string `db:"complete_time"`
	}
	err := next.DB().Get(&row, next.DB().Rebind("SELECT is_success, complete_time FROM JOB_EXECUTION_LOG WHERE task_id = ?"), id)
	if err != nil {
		t.Fatalf("execution row of the acknowledged task after the crash: %v", err)
	}
	if row.Success != 1 || row.Complete == nil {
		t.Fatalf("execution row %+v: want completed and successful", row)
	}
}

// TestHistoryNotOnDiskLeavesTheBatchUnacknowledged: when the history of a
// batch cannot be made durable in time (the writer closed, a stalled
// disk), nothing of the batch is committed or acknowledged: the engine
// resends the updates.
func TestHistoryNotOnDiskLeavesTheBatchUnacknowledged(t *testing.T) {
	r := newRig(t)
	tw := openTrace(t, "sqlite", filepath.Join(t.TempDir(), "trace.db"), filepath.Join(t.TempDir(), "spool"))
	r.rebuild(func(d *Deps) { d.Tasks = trace.NewObserver(tw, nil) })
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	id := r.running("job")[0].TaskID
	if err := tw.Close(r.ctx); err != nil {
		t.Fatal(err)
	}
	var results []bool
	r.sched.updates = []pendingUpdate{{st: engine.Status{TaskID: id, AgentID: "agent-1", State: task.Finished},
		done: func(ok bool) { results = append(results, ok) }}}
	r.sched.handleUpdates(r.ctx)
	if len(results) != 1 || results[0] {
		t.Fatalf("results %v, want one unacknowledged update", results)
	}
	if _, ok := r.running("job")[0]; !ok {
		t.Fatal("the task's end was committed without its history")
	}
}

// TestUnreachableCountedLostOnlyWithItsHistory: a task the scheduler
// itself counts lost (unreachable for too long) is committed lost only
// once the LOST's history is on disk; when it cannot be, the task stays
// as it was and is counted lost again at the next tick.
func TestUnreachableCountedLostOnlyWithItsHistory(t *testing.T) {
	r := newRig(t)
	tw := openTrace(t, "sqlite", filepath.Join(t.TempDir(), "trace.db"), filepath.Join(t.TempDir(), "spool"))
	r.rebuild(func(d *Deps) { d.Tasks = trace.NewObserver(tw, nil) })
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.Failover = 1, true })
	r.trigger("job")
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	id := r.running("job")[0].TaskID
	r.status(id, "TASK_UNREACHABLE")
	if err := tw.Close(r.ctx); err != nil { // from here every event is dropped
		t.Fatal(err)
	}
	r.clk.Advance(r.sched.deps.Options.Unreachable)
	r.sched.recon.periodic(r.ctx)
	if e, ok := r.running("job")[0]; !ok || e.State != task.Unreachable {
		t.Fatalf("running %+v %v: the LOST was committed without its history", e, ok)
	}
	if _, ok := r.sched.st.unreachable[id]; !ok {
		t.Fatal("the task is no longer watched: it would never be counted lost")
	}
}

func openTrace(t testing.TB, dialect, dsn, spool string) *trace.Writer {
	t.Helper()
	w, err := trace.Open(context.Background(), trace.Options{Dialect: dialect, DSN: dsn, SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w
}

// copyDir copies the regular files of src into dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err == nil {
			_, err = io.Copy(out, in)
			out.Close()
		}
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// notDurable hides an observer's Sync: the scheduler then commits and
// acknowledges updates without waiting for their history (what it did
// before observe.Durable).
type notDurable struct{ observe.Tasks }

// BenchmarkStatusBatchHistory is the cost of making a batch's history
// durable before its commit: batches of status updates (each a status
// trace and an execution start, on the real trace writer: SQLite, spool
// fsynced) handled and committed on the in-memory registry, without the
// wait (no-sync, the old order) and with it (sync). ns/update is the
// loop's time per update; with one update per batch every update waits
// for a whole fsync, with 64 the fsync is shared.
func BenchmarkStatusBatchHistory(b *testing.B) {
	for _, size := range []int{1, 64} {
		for _, sync := range []bool{false, true} {
			name := fmt.Sprintf("batch=%d/no-sync", size)
			if sync {
				name = fmt.Sprintf("batch=%d/sync", size)
			}
			b.Run(name, func(b *testing.B) { benchStatusBatch(b, size, sync) })
		}
	}
}

func benchStatusBatch(b *testing.B, size int, sync bool) {
	r := newRig(b)
	tw := openTrace(b, "sqlite", filepath.Join(b.TempDir(), "trace.db"), filepath.Join(b.TempDir(), "spool"))
	obs := trace.Tee(trace.NewObserver(tw, nil))
	if !sync {
		obs = notDurable{obs}
	}
	r.rebuild(func(d *Deps) { d.Tasks = obs })
	r.addApp("app", 0.01, 1)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.CPUCount, j.MemoryMB = size, 0.01, 1 })
	r.trigger("job")
	r.offer("o1", 64, 65536)
	r.sched.launcher.round(r.ctx)
	running := r.running("job")
	if len(running) != size {
		b.Fatalf("%d running, want %d", len(running), size)
	}
	states := []task.State{task.Starting, task.Running}
	b.ResetTimer()
	for i := range b.N {
		for _, e := range running {
			r.sched.updates = append(r.sched.updates, pendingUpdate{
				st:   engine.Status{TaskID: e.TaskID, AgentID: "agent-1", State: states[i%2], Timestamp: t0.Add(time.Duration(i) * time.Millisecond)},
				done: func(bool) {},
			})
		}
		r.sched.handleUpdates(r.ctx)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/update")
}
