package embedded

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// restartable is a work directory agents are started on in turn, as a
// process restarted on the same data directory would be; whatever the
// last one left running is killed at cleanup.
func restartable(t *testing.T, mutate func(*Config)) (start func() *Cluster) {
	t.Helper()
	work := t.TempDir()
	t.Cleanup(func() { reap(filepath.Join(work, "slaves"), true, nil) })
	return func() *Cluster {
		return newCluster(t, func(cfg *Config) {
			cfg.WorkDir = work
			if mutate != nil {
				mutate(cfg)
			}
		})
	}
}

// checkpointing is a framework that asks agents to checkpoint its tasks,
// as the scheduler's does, with a failover timeout.
func checkpointing(id string) mesos.FrameworkInfo {
	info := frameworkInfo()
	yes, hour := true, 3600.0
	info.Checkpoint, info.FailoverTimeout = &yes, &hour
	if id != "" {
		info.ID = &mesos.FrameworkID{Value: id}
	}
	return info
}

// runThenStop subscribes fw to c, runs the task t1 (which hangs) on the
// executor e1 (which re-subscribes when it loses its agent), and closes c.
// It returns the scheduler, the executor's pid and t1's TASK_RUNNING.
func runThenStop(t *testing.T, c *Cluster, fw mesos.FrameworkInfo) (*sched, int, mesos.TaskStatus) {
	t.Helper()
	s := subscribe(t, c, fw)
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "recover", 0.5, 64), 1, 128))
	running := s.update("t1")
	s.ack(running)
	pid := executorPid(t, c, "e1")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return s, pid, running
}

// executorPid is the pid /state shows for the executor, once it started.
func executorPid(t *testing.T, c *Cluster, id string) int {
	t.Helper()
	pid := 0
	eventually(t, "executor "+id+" to start", func() bool {
		for _, e := range c.Snapshot().Executors {
			if e.ID == id && e.PID > 0 {
				pid = e.PID
			}
		}
		return pid > 0
	})
	return pid
}

func alive(pid int) bool {
	_, running := procStart(pid)
	return running
}

// An agent stopped and started again on its work directory takes over the
// executor it left running: the executor re-subscribes, the framework that
// subscribes again finds its tasks (reconciled as running, not unknown),
// the update it had not acknowledged is sent again, the executor's
// resources stay charged, and the executor still obeys (KILL).
func TestRestartTakesRunningExecutorsOver(t *testing.T) {
	start := restartable(t, nil)
	c1 := start()
	s1 := subscribe(t, c1, checkpointing(""))
	ex := execInfo(t, "e1", "recover", 0.5, 64)
	s1.launch(s1.offer(), taskInfo(c1, "t1", "hang", ex, 1, 128))
	s1.ack(s1.update("t1"))
	s1.launch(s1.freshOffer(), taskInfo(c1, "t2", "hang", ex, 1, 128))
	unacked := s1.update("t2")
	pid := executorPid(t, c1, "e1")
	url := c1.URL()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("executor %d died with the agent", pid)
	}

	c2 := start()
	if c2.URL() != url {
		t.Fatalf("restarted agent at %s, want %s where its executors look for it", c2.URL(), url)
	}
	if n := c2.Recovered(); n != 1 {
		t.Fatalf("recovered %d executors, want 1", n)
	}
	eventually(t, "the executor to re-subscribe", func() bool {
		ex := c2.Snapshot().Executors
		return len(ex) == 1 && ex[0].State == "RUNNING" && ex[0].PID == pid
	})
	if c2.iso.on() { // it stays in its container, with its and its tasks' limits
		c2.mu.Lock()
		e := c2.agents[0].liveExecutors()[0]
		g, want := e.cgroup, e.limits
		c2.mu.Unlock()
		if g == nil || !slices.Contains(g.Procs(), pid) {
			t.Fatalf("recovered executor %d is not in its container cgroup %v", pid, g)
		}
		container, _ := want(c2.iso.pidsMax, c2.iso.quota)
		if got := g.Stats().MemoryLimit; got != container.MemoryBytes {
			t.Errorf("container memory limit %d, want %d (the executor's and its two tasks')", got, container.MemoryBytes)
		}
	}
	s2 := subscribe(t, c2, checkpointing(s1.fwID))
	if again := s2.update("t2"); again.GetState() != mesos.TASK_RUNNING || string(again.UUID) != string(unacked.UUID) {
		t.Fatalf("unacknowledged update after the restart: %s %x, want it again (%x)", again.GetState(), again.UUID, unacked.UUID)
	}
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{
		Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: "t1"}}}}})
	if st := s2.update("t1"); st.GetState() != mesos.TASK_RUNNING || st.GetReason() != mesos.REASON_RECONCILIATION {
		t.Fatalf("t1 reconciled as %s (%s %q), want TASK_RUNNING", st.GetState(), st.GetReason(), st.GetMessage())
	}
	if cpus := scalarOf(s2.freshOffer().Resources, "cpus"); cpus != 4-0.5-2 {
		t.Errorf("offered %v cpus, want the executor's and tasks' still held (%v)", cpus, 4-0.5-2)
	}
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	if st := s2.update("t1"); st.GetState() != mesos.TASK_KILLED || st.GetSource() != mesos.SOURCE_EXECUTOR {
		t.Fatalf("t1 after KILL: %s from %s", st.GetState(), st.GetSource())
	}
}

// An executor that died while the agent was away: its task fails with a
// message saying so, dated when it was last seen alive (before the
// restart), not when the agent found out.
func TestRestartReportsExecutorsGone(t *testing.T) {
	start := restartable(t, nil)
	c1 := start()
	s1, pid, running := runThenStop(t, c1, checkpointing(""))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the executor to die", func() bool { return !alive(pid) })
	died := time.Now()

	c2 := start()
	if n := c2.Recovered(); n != 0 {
		t.Fatalf("recovered %d executors, want none", n)
	}
	s2 := subscribe(t, c2, checkpointing(s1.fwID))
	st := s2.update("t1")
	if st.GetState() != mesos.TASK_FAILED || st.GetSource() != mesos.SOURCE_AGENT ||
		st.GetMessage() != "the executor was gone when the agent restarted" {
		t.Fatalf("t1: %s from %s: %q", st.GetState(), st.GetSource(), st.GetMessage())
	}
	at := time.Unix(0, int64(st.GetTimestamp()*1e9))
	if at.After(died) || at.Before(time.Unix(0, int64(running.GetTimestamp()*1e9))) {
		t.Fatalf("t1 ended at %v, want when its executor was last seen (before %v, after it ran)", at, died)
	}
	s2.ack(st)
	if n := len(c2.Snapshot().Tasks); n != 0 {
		t.Fatalf("%d tasks left after the acknowledgement", n)
	}
}

// Recover = cleanup shuts down what the earlier run left, then Cleaned is
// closed; the next start reports the task's end.
func TestRecoverCleanupStopsEverything(t *testing.T) {
	start := restartable(t, nil)
	c1 := start()
	s1, pid, _ := runThenStop(t, c1, checkpointing(""))
	cleanup := restartableAgain(t, c1, func(cfg *Config) { cfg.Recover = RecoverCleanup })
	if n := cleanup.Recovered(); n != 1 {
		t.Fatalf("cleanup found %d executors, want 1", n)
	}
	select {
	case <-cleanup.Cleaned():
	case <-time.After(deadline):
		t.Fatal("cleanup did not end")
	}
	if alive(pid) {
		t.Fatalf("executor %d survived the cleanup", pid)
	}
	if _, code := trySubscribe(t, cleanup.URL(), checkpointing(s1.fwID)); code != 503 {
		t.Errorf("subscribe during cleanup: %d, want 503", code)
	}
	if err := cleanup.Close(); err != nil {
		t.Fatal(err)
	}
	c3 := start()
	s3 := subscribe(t, c3, checkpointing(s1.fwID))
	if st := s3.update("t1"); st.GetState() != mesos.TASK_FAILED || !strings.Contains(st.GetMessage(), "recover=cleanup") {
		t.Fatalf("t1 after the cleanup: %s %q", st.GetState(), st.GetMessage())
	}
}

// restartableAgain starts an agent on c's work directory with mutate.
func restartableAgain(t *testing.T, c *Cluster, mutate func(*Config)) *Cluster {
	t.Helper()
	return newCluster(t, func(cfg *Config) {
		cfg.WorkDir = c.cfg.WorkDir
		mutate(cfg)
	})
}

// The records of a task replay into its state: the latest update, those
// not acknowledged (to resend), whether the executor has it; a task whose
// end was acknowledged is forgotten; a line cut short ends the records.
// A recovered executor's task that was sent to it but that it does not
// know (the agent stopped before the LAUNCH reached it) is lost.
func TestRecoveredTaskRecords(t *testing.T) {
	c, err := New(Config{WorkDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	fw := c.recoverFramework(checkpointing("fw-1"))
	e := &executor{fw: fw, agent: c.agents[0], id: "e1", tasks: map[string]*task{}, persisted: persisted{meta: c.ck.runDir("fw-1", "e1", "c1"), ck: c.ck},
		info: mesos.ExecutorInfo{ExecutorID: mesos.ExecutorID{Value: "e1"}}}
	c.ck.executor(e)
	status := func(tk *task, s mesos.TaskState) mesos.TaskStatus {
		return mesos.TaskStatus{TaskID: tk.info.TaskID, State: s.Enum(), UUID: uuidBytes()}
	}
	newTask := func(id string) *task {
		tk := &task{info: mesos.TaskInfo{TaskID: mesos.TaskID{Value: id}, Resources: []mesos.Resource{scalar("cpus", 1)}}, exec: e}
		c.ck.task(tk, false)
		return tk
	}
	t1 := newTask("t1") // ran, its end not acknowledged
	c.ck.record(t1, record{Launched: true})
	run1, end1 := status(t1, mesos.TASK_RUNNING), status(t1, mesos.TASK_FINISHED)
	c.ck.update(t1, run1, true)
	c.ck.record(t1, record{Ack: run1.UUID})
	c.ck.update(t1, end1, true)
	f, _ := os.OpenFile(taskMeta(t1), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"ack":"tru`) // the machine stopped mid-write
	f.Close()
	newTask("t2")       // queued, never sent
	t3 := newTask("t3") // over and acknowledged
	end3 := status(t3, mesos.TASK_FINISHED)
	c.ck.update(t3, end3, true)
	c.ck.record(t3, record{Ack: end3.UUID})
	t4 := newTask("t4") // sent, unknown to the executor after the restart
	c.ck.record(t4, record{Launched: true})

	run, ok := c.ck.loadRun(e.meta)
	if !ok || len(run.tasks) != 4 {
		t.Fatalf("loaded %v tasks (ok %v), want 4", len(run.tasks), ok)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	re := c.recoverRun(fw, run)
	got1, got2, got4 := fw.tasks["t1"], fw.tasks["t2"], fw.tasks["t4"]
	switch {
	case got1 == nil || got1.state != mesos.TASK_FINISHED || len(got1.pending) != 1 || string(got1.pending[0].status.UUID) != string(end1.UUID) ||
		!got1.launched || !got1.released || !got1.acked[string(run1.UUID)]:
		t.Fatalf("t1 %+v", got1)
	case got2 == nil || got2.launched || got2.state != mesos.TASK_STAGING || len(re.queued) != 1 || re.queued[0].tasks[0] != got2:
		t.Fatalf("t2 %+v, queued %+v", got2, re.queued)
	case fw.tasks["t3"] != nil || exists(taskMeta(t3)):
		t.Fatal("t3 recovered, or its records kept")
	case got4 == nil || !got4.launched:
		t.Fatalf("t4 %+v", got4)
	}
	c.dropUnknownLaunched(re, map[string]bool{})
	if got4.state != mesos.TASK_LOST || got4.status.GetReason() != mesos.REASON_AGENT_RESTARTED || got2.state != mesos.TASK_STAGING {
		t.Fatalf("after the executor re-subscribed knowing none: t4 %s %s, t2 %s", got4.state, got4.status.GetReason(), got2.state)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
