package trace

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

type capture struct {
	mu  sync.Mutex
	evs []Event
}

func (c *capture) Record(ev Event) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

func (c *capture) take() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.evs
	c.evs = nil
	return out
}

const (
	readyTask    = "job@-@1@-@READY@-@agent-1@-@u1"
	failoverTask = "job@-@1@-@FAILOVER@-@agent-2@-@u2"
)

func taskEvent(id string, at time.Time, transient bool) observe.TaskEvent {
	src, by := "NORMAL_TRIGGER", "api:alice"
	if id == failoverTask {
		src, by = "FAILOVER", "failover"
	}
	return observe.TaskEvent{TaskID: id, Job: "job", App: "app", AgentID: "agent-1", Hostname: "agent-host",
		Item: 1, Source: src, Trigger: by, Transient: transient, At: at}
}

func TestObserverTransientTaskLifecycle(t *testing.T) {
	c := &capture{}
	o := NewObserver(c, nil)
	launch := t0
	o.Launched(taskEvent(readyTask, launch, true))
	started, done := t0.Add(2*time.Second), t0.Add(5*time.Second)
	o.StatusChanged(taskEvent(readyTask, t0.Add(time.Second), true),
		engine.Status{TaskID: readyTask, AgentID: "agent-1", State: "TASK_STARTING", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(time.Second)})
	o.StatusChanged(taskEvent(readyTask, t0.Add(3*time.Second), true),
		engine.Status{TaskID: readyTask, AgentID: "agent-1", State: "TASK_RUNNING", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(3 * time.Second),
			Data: []byte(`{"hostname":"exec-host","ip":"10.1.2.3","startTime":"` + started.Format(time.RFC3339Nano) + `"}`)})
	o.StatusChanged(taskEvent(readyTask, t0.Add(6*time.Second), true),
		engine.Status{TaskID: readyTask, AgentID: "agent-1", State: "TASK_FAILED", Source: "SOURCE_EXECUTOR", Message: "exit code 3: boom",
			Timestamp: t0.Add(6 * time.Second),
			Data: []byte(`{"hostname":"exec-host","ip":"10.1.2.3","startTime":"` + started.Format(time.RFC3339Nano) +
				`","completeTime":"` + done.Format(time.RFC3339Nano) + `","exitCode":3}`)})
	got := c.take()
	exec := NewID("execution", readyTask)
	st := func(state, source, msg string, at time.Time, ts time.Time) StatusTrace {
		id := NewID("status", readyTask, "TASK_STAGING")
		if state != "TASK_STAGING" {
			id = NewID("status", readyTask, state, itoa64(ts.UnixNano()), "", "SOURCE_EXECUTOR")
		}
		return StatusTrace{ID: id, JobName: "job", TaskID: readyTask, SlaveID: "agent-1", Source: source,
			ExecutionType: "READY", ShardingItem: "1", State: task.State(state), Message: msg, CreationTime: at}
	}
	want := []Event{
		st("TASK_STAGING", SourceScheduler, "", launch, time.Time{}),
		st("TASK_STARTING", SourceExecutor, "", t0.Add(time.Second), t0.Add(time.Second)),
		st("TASK_RUNNING", SourceExecutor, "", t0.Add(3*time.Second), t0.Add(3*time.Second)),
		ExecutionStart{ID: exec, JobName: "job", TaskID: readyTask, Hostname: "exec-host", IP: "10.1.2.3", ShardingItem: 1,
			ExecutionSource: "NORMAL_TRIGGER", TriggeredBy: "api:alice", StartTime: started},
		st("TASK_FAILED", SourceExecutor, "exit code 3: boom", t0.Add(6*time.Second), t0.Add(6*time.Second)),
		ExecutionComplete{ID: exec, JobName: "job", TaskID: readyTask, Hostname: "exec-host", IP: "10.1.2.3", ShardingItem: 1,
			ExecutionSource: "NORMAL_TRIGGER", TriggeredBy: "api:alice", StartTime: started, CompleteTime: done, Success: false, FailureCause: "exit code 3: boom"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %+v\nwant %+v", got, want)
	}
}

func itoa64(v int64) string { return itoa(int(v)) }

// A failover task's traces carry the failed task's id; an update Mesos
// resends gets the same ID; an agent-sourced loss without data still
// completes the execution log, from the launch time and agent host.
func TestObserverFailoverResendAndLoss(t *testing.T) {
	c := &capture{}
	o := NewObserver(c, nil)
	o.Launched(taskEvent(readyTask, t0, true))
	lost := engine.Status{TaskID: readyTask, AgentID: "agent-1", State: "TASK_LOST", Source: "SOURCE_MASTER",
		Reason: "REASON_AGENT_REMOVED", Timestamp: t0.Add(time.Second)}
	o.StatusChanged(taskEvent(readyTask, t0.Add(time.Second), true), lost)
	o.StatusChanged(taskEvent(readyTask, t0.Add(2*time.Second), true), lost) // resent
	evs := c.take()
	if len(evs) != 5 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	if evs[1].EventID() != evs[3].EventID() || evs[2].EventID() != evs[4].EventID() {
		t.Fatal("a resent update got a new id")
	}
	tr := evs[1].(StatusTrace)
	if tr.Source != SourceScheduler || tr.Message != "REASON_AGENT_REMOVED" || tr.State != "TASK_LOST" {
		t.Fatalf("trace %+v", tr)
	}
	ec := evs[2].(ExecutionComplete)
	if ec.Success || ec.FailureCause != "TASK_LOST (REASON_AGENT_REMOVED)" || !ec.StartTime.Equal(t0) || ec.Hostname != "agent-host" || ec.IP != "" {
		t.Fatalf("completion %+v", ec)
	}

	o.Launched(taskEvent(failoverTask, t0.Add(time.Minute), true))
	o.StatusChanged(taskEvent(failoverTask, t0.Add(2*time.Minute), true),
		engine.Status{TaskID: failoverTask, State: "TASK_FINISHED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(2 * time.Minute)})
	evs = c.take()
	stg, fin, done := evs[0].(StatusTrace), evs[1].(StatusTrace), evs[2].(ExecutionComplete)
	if stg.State != "TASK_STAGING" || stg.ExecutionType != ExecutionFailover || stg.OriginalTaskID != readyTask || fin.OriginalTaskID != readyTask {
		t.Fatalf("failover traces %+v %+v", stg, fin)
	}
	if !done.Success || done.FailureCause != "" || done.ExecutionSource != "FAILOVER" || fin.SlaveID != "agent-1" {
		t.Fatalf("failover completion %+v", done)
	}
}

// A task the agent ended while the scheduler was away (its executor was
// gone when the agent restarted) completes when the agent dates its end,
// not when the scheduler heard of it; a later date is not taken.
func TestObserverAgentDatedEnd(t *testing.T) {
	c := &capture{}
	o := NewObserver(c, nil)
	o.Launched(taskEvent(readyTask, t0, true))
	ended := t0.Add(time.Minute)
	heard := t0.Add(time.Hour)
	o.StatusChanged(taskEvent(readyTask, heard, true), engine.Status{TaskID: readyTask, AgentID: "agent-1", State: "TASK_FAILED",
		Source: "SOURCE_AGENT", Reason: "REASON_EXECUTOR_TERMINATED", Message: "the executor was gone when the scheduler restarted", Timestamp: ended})
	evs := c.take()
	ec := evs[len(evs)-1].(ExecutionComplete)
	if !ec.CompleteTime.Equal(ended) || ec.FailureCause != "the executor was gone when the scheduler restarted" {
		t.Fatalf("completion %v %q, want at %v with the agent's message", ec.CompleteTime, ec.FailureCause, ended)
	}
	o.Launched(taskEvent(failoverTask, t0, true))
	o.StatusChanged(taskEvent(failoverTask, t0.Add(time.Second), true), engine.Status{TaskID: failoverTask, State: "TASK_FAILED",
		Source: "SOURCE_AGENT", Timestamp: t0.Add(2 * time.Second)}) // an agent clock ahead of the scheduler's
	evs = c.take()
	if ec := evs[len(evs)-1].(ExecutionComplete); !ec.CompleteTime.Equal(t0.Add(time.Second)) {
		t.Fatalf("completion at %v, want when the scheduler heard (%v)", ec.CompleteTime, t0.Add(time.Second))
	}
}

// A daemon task's task-level updates are traces only.
func TestObserverDaemonTaskHasNoTaskLevelExecution(t *testing.T) {
	c := &capture{}
	o := NewObserver(c, nil)
	o.Launched(taskEvent(readyTask, t0, false))
	o.StatusChanged(taskEvent(readyTask, t0, false), engine.Status{TaskID: readyTask, State: "TASK_RUNNING"})
	o.StatusChanged(taskEvent(readyTask, t0, false), engine.Status{TaskID: readyTask, State: "TASK_KILLED"})
	for _, ev := range c.take() {
		if _, ok := ev.(StatusTrace); !ok {
			t.Fatalf("daemon task recorded %T", ev)
		}
	}
}

func TestDaemonRunSampling(t *testing.T) {
	for _, tc := range []struct {
		sampling int
		want     []int // runs recorded
	}{
		{0, []int{1, 2, 3, 4, 5, 6, 7}},
		{1, []int{1, 2, 3, 4, 5, 6, 7}},
		{3, []int{3, 6}},
	} {
		c := &capture{}
		var asked []string
		o := NewObserver(c, func(app string) int { asked = append(asked, app); return tc.sampling })
		// Through Tee, as the scheduler sees it (observe.Daemons).
		d := Tee(&countObserver{}, o).(observe.Daemons)
		ev := taskEvent(readyTask, t0, false)
		var got []int
		for run := 1; run <= 7; run++ {
			at := t0.Add(time.Duration(run) * time.Minute)
			rep := jobs.DaemonReport{Type: jobs.DaemonBegin, TaskID: readyTask, RunID: itoa(run), ShardingItem: 1,
				Hostname: "h", IP: "10.0.0.7", StartTime: at}
			d.DaemonRun(ev, rep)
			began := len(c.evs)
			rep.Type, rep.CompleteTime, rep.Success, rep.Message = jobs.DaemonComplete, at.Add(time.Second), run%2 == 0, "boom"
			d.DaemonRun(ev, rep)
			if after := len(c.evs); began > 0 && after != began+1 || began == 0 && after != 0 {
				t.Fatalf("sampling %d run %d: BEGIN and COMPLETE decided differently (%d, %d)", tc.sampling, run, began, after)
			}
			if evs := c.take(); len(evs) == 2 {
				s, e := evs[0].(ExecutionStart), evs[1].(ExecutionComplete)
				wantCause := "boom"
				if e.Success {
					wantCause = ""
				}
				if s.ID != e.ID || s.ID != NewID("daemon-execution", readyTask, itoa(run)) || s.JobName != "job" || s.ShardingItem != 1 ||
					s.IP != "10.0.0.7" || !s.StartTime.Equal(at) || !e.CompleteTime.Equal(at.Add(time.Second)) ||
					e.FailureCause != wantCause || s.ExecutionSource != "NORMAL_TRIGGER" {
					t.Fatalf("run events %+v %+v", s, e)
				}
				got = append(got, run)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("sampling %d recorded runs %v, want %v", tc.sampling, got, tc.want)
		}
		if len(asked) == 0 || asked[0] != "app" {
			t.Errorf("sampling count asked for %v", asked)
		}
	}
	// A COMPLETE whose BEGIN was never seen is recorded; a bad task id is not.
	o := NewObserver(&capture{}, func(string) int { return 5 })
	ev := taskEvent(readyTask, t0, false)
	if !o.daemonRun(ev, jobs.DaemonReport{Type: jobs.DaemonComplete, TaskID: readyTask, RunID: "x"}, 5) {
		t.Fatal("unmatched COMPLETE dropped")
	}
	if o.daemonRun(ev, jobs.DaemonReport{Type: jobs.DaemonBegin, TaskID: "not-a-task-id"}, 0) {
		t.Fatal("bad task id recorded")
	}
}

type countObserver struct{ n int }

func (c *countObserver) Launched(observe.TaskEvent)                     { c.n++ }
func (c *countObserver) StatusChanged(observe.TaskEvent, engine.Status) { c.n++ }
func (c *countObserver) DaemonRun(observe.TaskEvent, jobs.DaemonReport) { c.n++ }

func TestTee(t *testing.T) {
	a, b := &countObserver{}, &countObserver{}
	o := Tee(a, nil, b)
	o.Launched(observe.TaskEvent{})
	o.StatusChanged(observe.TaskEvent{}, engine.Status{})
	o.(observe.Daemons).DaemonRun(observe.TaskEvent{}, jobs.DaemonReport{})
	if a.n != 3 || b.n != 3 {
		t.Fatalf("%d %d", a.n, b.n)
	}
}

// Observer → Writer → rows, the whole path on SQLite.
func TestObserverIntoDatabase(t *testing.T) {
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db")})
	o := NewObserver(w, nil)
	o.Launched(taskEvent(readyTask, t0, true))
	o.StatusChanged(taskEvent(readyTask, t0.Add(time.Second), true),
		engine.Status{TaskID: readyTask, State: "TASK_RUNNING", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(time.Second),
			Data: []byte(`{"hostname":"eh","ip":"10.0.0.9","startTime":"2024-03-01T10:00:01Z"}`)})
	o.StatusChanged(taskEvent(readyTask, t0.Add(2*time.Second), true),
		engine.Status{TaskID: readyTask, State: "TASK_FINISHED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(2 * time.Second),
			Data: []byte(`{"hostname":"eh","ip":"10.0.0.9","startTime":"2024-03-01T10:00:01Z","completeTime":"2024-03-01T10:00:02Z","exitCode":0}`)})
	mustFlush(t, w)
	tr := traces(t, w)
	if len(tr) != 3 || tr[0].State != "TASK_STAGING" || tr[2].State != "TASK_FINISHED" {
		t.Fatalf("traces %+v", tr)
	}
	ex := execs(t, w)[NewID("execution", readyTask)]
	want := execRow{ID: NewID("execution", readyTask), JobName: "job", TaskID: readyTask, Hostname: "eh", IP: "10.0.0.9",
		ShardingItem: 1, ExecutionSource: "NORMAL_TRIGGER", IsSuccess: 1, StartTime: ptr(t0.Add(time.Second)), CompleteTime: ptr(t0.Add(2 * time.Second)),
		TriggeredBy: ptr("api:alice"), Result: ptr("SUCCEEDED")}
	if !reflect.DeepEqual(ex, want) {
		t.Fatalf("execution\n got %+v\nwant %+v", ex, want)
	}
}

// A row about a task whose id carries a time is named by that time first
// (rows go into the primary key's index in time order) and by its facts
// after (the same facts, the same ID); older task ids keep name-based IDs.
func TestTaskEventIDs(t *testing.T) {
	v7 := func(ms int64) string { return fmt.Sprintf("%08x-%04x-7abc-8def-0123456789ab", ms>>16, ms&0xffff) }
	ms := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC).UnixMilli()
	early := "job@-@1@-@READY@-@agent-1@-@" + v7(ms)
	late := "job@-@1@-@READY@-@agent-1@-@" + v7(ms+1)
	a := TaskEventID(early, "status", early, "TASK_RUNNING")
	if a != TaskEventID(early, "status", early, "TASK_RUNNING") {
		t.Fatal("the same facts gave two IDs")
	}
	if a == TaskEventID(early, "status", early, "TASK_FINISHED") {
		t.Fatal("two facts gave one ID")
	}
	if a[14] != '8' || len(a) != 36 {
		t.Fatalf("%q is not a version 8 UUID", a)
	}
	if at, ok := jobs.UUIDTime(strings.Split(early, "@-@")[4]); !ok || at.UnixMilli() != ms {
		t.Fatalf("UUIDTime of %s: %v %v", early, at, ok)
	}
	if want := fmt.Sprintf("%012x", ms); a[:8]+a[9:13] != want {
		t.Fatalf("%q does not begin with the task's milliseconds %s", a, want)
	}
	if b := TaskEventID(late, "status", late, "TASK_STAGING"); b <= a {
		t.Fatalf("a later task's row %q sorts before an earlier one's %q", b, a)
	}
	if got, want := TaskEventID(readyTask, "execution", readyTask), NewID("execution", readyTask); got != want {
		t.Fatalf("an older task id: %q, want the name-based %q", got, want)
	}
}

// The Observer is durable through its Writer: Sync (also through a Tee)
// returns once what it recorded is in the spool, and fails with
// ErrDropped once the writer dropped events since the last Sync (here:
// closed), so the scheduler never commits an update whose history is not
// on disk. A Recorder that cannot sync (capture) makes Sync a no-op.
func TestObserverSyncIsTheWritersAndReportsDrops(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db"), SpoolDir: spool})
	o := NewObserver(w, nil)
	tee := Tee(o).(observe.Durable)
	o.Launched(taskEvent(readyTask, t0, true))
	if err := tee.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if segs := segments(t, spool); len(segs) != 1 {
		t.Fatalf("after Sync the spool holds %v, want the launch's segment", segs)
	}
	if err := w.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	o.StatusChanged(taskEvent(readyTask, t0.Add(time.Second), true), engine.Status{TaskID: readyTask, State: task.Finished})
	if err := tee.Sync(ctxT(t)); !errors.Is(err, ErrDropped) {
		t.Fatalf("Sync after dropped events: %v, want ErrDropped", err)
	}
	if err := o.Sync(ctxT(t)); err != nil {
		t.Fatalf("a second Sync with nothing dropped since: %v", err)
	}
	if err := NewObserver(&capture{}, nil).Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// TestObserverRecordsTheNominalInstant: an execution a cron instant queued carries that
// instant into its row (nominal_at), from its start and from a completion whose start
// was never recorded alike; one no instant queued has none.
func TestObserverRecordsTheNominalInstant(t *testing.T) {
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db")})
	o := NewObserver(w, nil)
	instant := t0.Add(-3 * time.Second) // a fire run late (a takeover's catch-up)
	cron := func(id string, at time.Time) observe.TaskEvent {
		ev := taskEvent(id, at, true)
		ev.Trigger, ev.Source, ev.Nominal = "catch-up", "MISFIRE", instant
		return ev
	}
	o.Launched(cron(readyTask, t0))
	o.StatusChanged(cron(readyTask, t0.Add(time.Second)),
		engine.Status{TaskID: readyTask, State: "TASK_RUNNING", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(time.Second)})
	o.StatusChanged(cron(readyTask, t0.Add(2*time.Second)),
		engine.Status{TaskID: readyTask, State: "TASK_FINISHED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(2 * time.Second)})
	o.StatusChanged(cron(failoverTask, t0.Add(2*time.Second)), // its end alone
		engine.Status{TaskID: failoverTask, State: "TASK_FAILED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(2 * time.Second)})
	o.StatusChanged(taskEvent("api-run", t0.Add(2*time.Second), true),
		engine.Status{TaskID: "api-run", State: "TASK_FINISHED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(2 * time.Second)})
	mustFlush(t, w)
	rows := execs(t, w)
	for _, id := range []string{readyTask, failoverTask} {
		if ex := rows[NewID("execution", id)]; ex.NominalAt == nil || !ex.NominalAt.Equal(instant) {
			t.Fatalf("%s: nominal_at %v, want the instant it served %v", id, ex.NominalAt, instant)
		}
	}
	if ex := rows[NewID("execution", "api-run")]; ex.NominalAt != nil {
		t.Fatalf("a run no cron instant queued: nominal_at %v, want none", ex.NominalAt)
	}
}

// A killed task's execution is KILLED, not FAILED (is_success stays 0,
// as the original wrote it); a failed one FAILED.
func TestObserverRecordsAKilledRun(t *testing.T) {
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db")})
	o := NewObserver(w, nil)
	o.Launched(taskEvent(readyTask, t0, true))
	o.StatusChanged(taskEvent(readyTask, t0.Add(time.Second), true),
		engine.Status{TaskID: readyTask, State: "TASK_KILLED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(time.Second), Message: "killed by alice"})
	o.StatusChanged(taskEvent(failoverTask, t0.Add(time.Second), true),
		engine.Status{TaskID: failoverTask, State: "TASK_FAILED", Source: "SOURCE_EXECUTOR", Timestamp: t0.Add(time.Second)})
	mustFlush(t, w)
	rows := execs(t, w)
	for id, want := range map[string]string{readyTask: "KILLED", failoverTask: "FAILED"} {
		if ex := rows[NewID("execution", id)]; ex.Result == nil || *ex.Result != want || ex.IsSuccess != 0 {
			t.Fatalf("%s: result %v, is_success %d; want %s, 0", id, ex.Result, ex.IsSuccess, want)
		}
	}
}
