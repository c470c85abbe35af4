package history

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// leader is one collector running as if on the leader.
type leader struct {
	t      *testing.T
	e      *testDB
	c      *Collector
	ticked chan time.Time
	cancel context.CancelFunc
	done   chan error
}

func startCollector(t *testing.T, e *testDB, reg Registry) *leader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &leader{t: t, e: e, c: NewCollector(e.store, reg, nil), ticked: make(chan time.Time, 1), cancel: cancel, done: make(chan error, 1)}
	l.c.ticked = l.ticked
	drain(e.clock.Changed)
	go func() { l.done <- l.c.Run(ctx) }()
	l.wait() // the catch-up tick
	<-e.clock.Changed
	t.Cleanup(l.stop)
	return l
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

func (l *leader) wait() {
	l.t.Helper()
	select {
	case <-l.ticked:
	case <-time.After(10 * time.Second):
		l.t.Fatal("the collector did not tick")
	}
}

// to moves the clock to the next minute boundaries up to at, waiting for
// each tick.
func (l *leader) to(at time.Time) {
	l.t.Helper()
	for {
		due, ok := l.e.clock.Pending()
		if !ok || due.After(at) {
			l.e.clock.Set(at)
			return
		}
		l.e.clock.Set(due)
		l.wait()
		<-l.e.clock.Changed
	}
}

func (l *leader) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	l.cancel = nil
	if err := <-l.done; err != nil {
		l.t.Errorf("Run: %v", err)
	}
}

func (l *leader) status(states ...string) {
	for _, s := range states {
		l.c.StatusChanged(observe.TaskEvent{}, engine.Status{State: task.State(s)})
	}
}

func newRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	ctx := context.Background()
	reg := registry.New(memory.New())
	if err := reg.Config().AddApp(ctx, app.Config{AppName: "app", AppURL: "file:///x", CPUCount: 1, MemoryMB: 64, BootstrapScript: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"job_a", "job_b", "job_c"} {
		c := jobs.Default()
		c.JobName, c.AppName, c.Cron, c.ShardingTotalCount = name, "app", "0 * * * * ?", 3
		if name == "job_c" {
			c.JobExecutionType = jobs.Daemon
		}
		if err := reg.Config().AddJob(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func setRunning(t *testing.T, reg *registry.Registry, job string, items ...int) {
	t.Helper()
	for _, i := range items {
		if err := reg.Change().Launch(job, i, task.Entry{TaskID: job + "-t", State: "TASK_RUNNING"}).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// results reads a task-result table as time → [success, failed].
func (e *testDB) results(t *testing.T, iv view.Interval) map[time.Time][2]int {
	t.Helper()
	got, err := e.store.points(context.Background(), resultTable(iv), "success_count, failed_count", "default", time.Unix(0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), iv, false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[time.Time][2]int{}
	for k, p := range got {
		out[k] = [2]int{p.a, p.b}
	}
	return out
}

func (e *testDB) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := e.db.Get(&n, "SELECT COUNT(*) FROM "+table); err != nil {
		t.Fatal(err)
	}
	return n
}

func at(h, m int) time.Time { return time.Date(2024, 3, 1, h, m, 0, 0, time.UTC) }

func TestCollectorMinutesHoursRunning(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		reg := newRegistry(t)
		setRunning(t, reg, "job_a", 0, 1)
		setRunning(t, reg, "job_c", 2)
		l := startCollector(t, e, RegistryOf(reg)) // 11:58:30
		l.status("TASK_FINISHED", "TASK_FINISHED", "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_RUNNING", "TASK_LOST")
		l.to(at(11, 59).Add(10 * time.Second))
		if got := e.results(t, view.Minute); len(got) != 1 || got[at(11, 58)] != [2]int{3, 2} {
			t.Fatalf("minute rows %v, want 11:58 → 3 ok, 2 failed (KILLED and RUNNING do not count)", got)
		}
		l.status("TASK_ERROR")
		l.to(at(12, 0).Add(time.Second))
		if got := e.results(t, view.Hour); len(got) != 1 || got[at(11, 0)] != [2]int{3, 3} {
			t.Fatalf("hour rows %v, want 11:00 → 3, 3", got)
		}
		l.to(at(12, 5))
		// One snapshot a minute: 11:58 (on start) to 12:05.
		tasks, err := e.store.TaskRunning(ctx, "default", view.LastWeek)
		if err != nil {
			t.Fatal(err)
		}
		last := tasks[len(tasks)-1]
		if len(tasks) != 7*24*60 || !last.StatisticsTime.Equal(at(12, 5)) || last.RunningCount != 3 || last.ID == 0 {
			t.Fatalf("running series: %d rows, last %+v", len(tasks), last)
		}
		if n := e.count(t, taskRunningTable); n != 8 {
			t.Errorf("%d task running rows, want 8 (11:58 … 12:05)", n)
		}
		js, _ := e.store.JobRunning(ctx, "default", view.LastWeek)
		if j := js[len(js)-1]; j.RunningCount != 2 {
			t.Errorf("jobs running %+v, want 2", j)
		}
		if gap := tasks[len(tasks)-9]; gap.RunningCount != 0 || gap.ID != 0 || !gap.StatisticsTime.Equal(at(11, 57)) {
			t.Errorf("before the first snapshot: %+v, want a zero row at 11:57", gap)
		}
		// Registered jobs: one row for today.
		regs, _ := e.store.JobRegistered(ctx, "default")
		if len(regs) != 1 || regs[0].RegisteredCount != 3 || !regs[0].StatisticsTime.Equal(at(0, 0)) {
			t.Errorf("register rows %+v", regs)
		}
	})
}

// A new leader takes over mid-minute: the old one's clean stop flushed its
// partial minute, the new one adds to it, and the hour is summed once.
func TestCollectorLeadershipMoves(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		reg := newRegistry(t)
		l1 := startCollector(t, e, RegistryOf(reg))
		l1.status("TASK_FINISHED", "TASK_FAILED")
		l1.to(at(11, 59).Add(20 * time.Second))
		l1.status("TASK_FINISHED")
		l1.stop() // leadership lost at 11:59:20

		l2 := startCollector(t, e, RegistryOf(reg))
		l2.status("TASK_FINISHED", "TASK_FINISHED")
		l2.to(at(12, 0))
		want := map[time.Time][2]int{at(11, 58): {1, 1}, at(11, 59): {3, 0}}
		if got := e.results(t, view.Minute); len(got) != 2 || got[at(11, 58)] != want[at(11, 58)] || got[at(11, 59)] != want[at(11, 59)] {
			t.Fatalf("minute rows %v, want %v", got, want)
		}
		l2.stop()
		// A third leader recomputes the last hour: same row, no double count.
		l3 := startCollector(t, e, RegistryOf(reg))
		l3.to(at(12, 1))
		if got := e.results(t, view.Hour); len(got) != 1 || got[at(11, 0)] != [2]int{4, 1} {
			t.Fatalf("hour rows %v, want 11:00 → 4, 1", got)
		}
		if n := e.count(t, resultTable(view.Hour)); n != 1 {
			t.Errorf("%d hour rows, want 1", n)
		}
		if n := e.count(t, registerTable); n != 1 {
			t.Errorf("%d register rows after three leaders on one day, want 1", n)
		}
		if n := e.count(t, taskRunningTable); n != 4 {
			t.Errorf("%d running rows, want 4 (11:58, 11:59, 12:00, 12:01: one per minute)", n)
		}
	})
}

// Counts survive a database error: they stay in memory until a flush works.
func TestCollectorKeepsCountsWhenTheDatabaseFails(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		l := startCollector(t, e, RegistryOf(newRegistry(t)))
		l.status("TASK_FINISHED", "TASK_FAILED")
		e.exec(t, "ALTER TABLE TASK_RESULT_STATISTICS_MINUTE RENAME TO TRSM_AWAY")
		l.to(at(11, 59).Add(30 * time.Second))
		l.status("TASK_FINISHED")
		e.exec(t, "ALTER TABLE TRSM_AWAY RENAME TO TASK_RESULT_STATISTICS_MINUTE")
		l.to(at(12, 0).Add(time.Second))
		got := e.results(t, view.Minute)
		if got[at(11, 58)] != [2]int{1, 1} || got[at(11, 59)] != [2]int{1, 0} {
			t.Fatalf("minute rows %v, want 11:58 → 1,1 and 11:59 → 1,0", got)
		}
		if got := e.results(t, view.Hour); got[at(11, 0)] != [2]int{2, 1} {
			t.Errorf("hour rows %v", got)
		}
	})
}

func TestCollectorDays(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		e.clock.Set(time.Date(2024, 3, 1, 23, 59, 10, 0, time.UTC))
		reg := newRegistry(t)
		l := startCollector(t, e, RegistryOf(reg))
		l.status("TASK_FINISHED", "TASK_FAILED", "TASK_FINISHED")
		l.to(time.Date(2024, 3, 2, 0, 0, 30, 0, time.UTC))
		if got := e.results(t, view.Day); got[at(0, 0)] != [2]int{2, 1} || len(got) != 1 {
			t.Fatalf("day rows %v, want 2024-03-01 → 2, 1", got)
		}
		c := jobs.Default()
		c.JobName, c.AppName, c.Cron = "job_d", "app", "0 * * * * ?"
		if err := reg.Config().AddJob(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		l.to(time.Date(2024, 3, 4, 0, 1, 0, 0, time.UTC)) // two more days
		regs, err := e.store.JobRegistered(context.Background(), "default")
		if err != nil {
			t.Fatal(err)
		}
		var counts []int
		for _, r := range regs {
			counts = append(counts, r.RegisteredCount)
		}
		if len(regs) != 4 || counts[0] != 3 || counts[1] != 3 || counts[3] != 4 {
			t.Errorf("registered %v, want [3 3 4 4] (the 2nd counted before job_d)", counts)
		}
	})
}

func TestOutcomeOf(t *testing.T) {
	for state, want := range map[string][2]bool{
		"TASK_FINISHED": {true, false}, "TASK_FAILED": {false, true}, "TASK_LOST": {false, true}, "TASK_ERROR": {false, true},
		"TASK_DROPPED": {false, true}, "TASK_GONE": {false, true}, "TASK_GONE_BY_OPERATOR": {false, true}, "TASK_UNKNOWN": {false, true},
		"TASK_KILLED": {false, false}, "TASK_RUNNING": {false, false}, "TASK_STAGING": {false, false}, "TASK_UNREACHABLE": {false, false},
	} {
		if ok, failed := outcomeOf(task.State(state)); [2]bool{ok, failed} != want {
			got := [2]bool{ok, failed}
			t.Errorf("%s: success/failure %v, want %v", state, got, want)
		}
	}
}
