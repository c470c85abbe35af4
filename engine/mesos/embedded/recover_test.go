package embedded

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
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
