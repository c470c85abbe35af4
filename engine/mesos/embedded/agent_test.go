package embedded

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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

func TestLaunchUpdatesAndAcks(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "finish", execInfo(t, "e1", "1", 0.1, 32), 1, 64))

	running := s.update("t1")
	if running.GetState() != mesos.TASK_RUNNING || len(running.UUID) != 16 ||
		running.GetAgentID().GetValue() != c.AgentID() || running.GetExecutorID().GetValue() != "e1" ||
		running.GetSource() != mesos.SOURCE_EXECUTOR {
		t.Fatalf("running update: %+v", running)
	}
	// The next update of the task is held until this one is acknowledged.
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value == "t1" {
			t.Fatalf("second update before the ack: %s", ev.Update.Status.GetState())
		}
	}
	s.ack(running)
	finished := s.update("t1")
	if finished.GetState() != mesos.TASK_FINISHED {
		t.Fatalf("second update %s", finished.GetState())
	}
	s.ack(finished)
	dir := c.Snapshot().Executors[0].Directory
	eventually(t, "executor sees both ACKNOWLEDGED", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "acked.log"))
		return string(b) == "t1 TASK_RUNNING\nt1 TASK_FINISHED\n"
	})
	eventually(t, "task removed after the terminal ack", func() bool { return len(c.Snapshot().Tasks) == 0 })
}

func TestUnacknowledgedUpdateIsRetried(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.UpdateRetryInterval = 20 * time.Millisecond })
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	first := s.update("t1")
	again := s.update("t1")
	if string(again.UUID) != string(first.UUID) || again.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("retry differs: %s vs %s", again.GetState(), first.GetState())
	}
}

func TestExecutorReusedForSecondTask(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.5, 128)
	s.launch(s.offer(), taskInfo(c, "t1", "finish", ex, 1, 64))
	s.ack(s.update("t1"))
	s.ack(s.update("t1"))
	o := s.freshOffer()
	if len(o.ExecutorIDs) != 1 || o.ExecutorIDs[0].Value != "e1" {
		t.Fatalf("offer executor_ids %v", o.ExecutorIDs)
	}
	if got := scalarOf(o.Resources, "cpus"); got != 3.5 {
		t.Fatalf("offered cpus %v, want 3.5 (executor still holds 0.5)", got)
	}
	pid := c.Snapshot().Executors[0].PID
	s.launch(o, taskInfo(c, "t2", "finish", ex, 3.5, 64)) // only the task's resources are charged
	if st := s.update("t2"); st.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("t2: %s %s", st.GetState(), st.GetMessage())
	}
	snap := c.Snapshot()
	if len(snap.Executors) != 1 || snap.Executors[0].PID != pid {
		t.Fatalf("executor not reused: %+v", snap.Executors)
	}
}

func TestKillLaunchedTask(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.ack(s.update("t1"))
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	if st := s.update("t1"); st.GetState() != mesos.TASK_KILLED || st.GetSource() != mesos.SOURCE_EXECUTOR {
		t.Fatalf("kill: %s %s", st.GetState(), st.GetSource())
	}
}

func TestKillQueuedTaskAndRegistrationTimeout(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.ExecutorRegistrationTimeout = 100 * time.Millisecond })
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "silent", "silent", 0.1, 32)
	s.launch(s.offer(), taskInfo(c, "t1", "finish", ex, 1, 64), taskInfo(c, "t2", "finish", ex, 1, 64))
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	killed := s.update("t1")
	if killed.GetState() != mesos.TASK_KILLED || killed.GetSource() != mesos.SOURCE_AGENT || len(killed.UUID) != 16 {
		t.Fatalf("queued kill: %s %s", killed.GetState(), killed.GetSource())
	}
	failed := s.update("t2")
	if failed.GetState() != mesos.TASK_FAILED || failed.GetReason() != mesos.REASON_EXECUTOR_REGISTRATION_TIMEOUT {
		t.Fatalf("registration timeout: %s %s", failed.GetState(), failed.GetReason())
	}
	if f := s.next(scheduler.Event_FAILURE).Failure; f.GetExecutorID().GetValue() != "silent" {
		t.Fatalf("failure %+v", f)
	}
}

func TestExecutorCrashFailsTasksAndReoffers(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.1, 32)
	s.launch(s.offer(), taskInfo(c, "t1", "crash", ex, 1, 64))
	s.ack(s.update("t1"))
	st := s.update("t1")
	if st.GetState() != mesos.TASK_FAILED || st.GetSource() != mesos.SOURCE_AGENT ||
		st.GetReason() != mesos.REASON_EXECUTOR_TERMINATED || !strings.Contains(st.GetMessage(), "status 3") {
		t.Fatalf("crash update: %s %s %s %q", st.GetState(), st.GetSource(), st.GetReason(), st.GetMessage())
	}
	f := s.next(scheduler.Event_FAILURE).Failure
	if f.GetExecutorID().GetValue() != "e1" || f.GetAgentID().GetValue() != c.AgentID() ||
		!syscall.WaitStatus(f.GetStatus()).Exited() || syscall.WaitStatus(f.GetStatus()).ExitStatus() != 3 {
		t.Fatalf("failure %+v", f)
	}
	o := s.freshOffer()
	if scalarOf(o.Resources, "cpus") != 4 || scalarOf(o.Resources, "mem") != 4096 {
		t.Fatalf("resources not fully re-offered: %v", o.Resources)
	}
}

func TestResourcesReofferedAfterTaskEnd(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "fail", execInfo(t, "e1", "1", 1, 512), 2, 1024))
	s.ack(s.update("t1"))
	if st := s.update("t1"); st.GetState() != mesos.TASK_FAILED {
		t.Fatalf("state %s", st.GetState())
	}
	o := s.freshOffer() // freed as soon as the terminal update arrived, before any ack
	if scalarOf(o.Resources, "cpus") != 3 || scalarOf(o.Resources, "mem") != 3584 {
		t.Fatalf("offer after task end: %v", o.Resources)
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_SHUTDOWN, Shutdown: &scheduler.Call_Shutdown{
		ExecutorID: mesos.ExecutorID{Value: "e1"}, AgentID: mesos.AgentID{Value: c.AgentID()}}})
	s.next(scheduler.Event_FAILURE)
	s.decline(o, 0)
	if o := s.freshOffer(); scalarOf(o.Resources, "cpus") != 4 {
		t.Fatalf("offer after executor exit: %v", o.Resources)
	}
}

func TestOrderedDeliveryOfExecutorMessages(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "msgs", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	for i := 0; i < 20; i++ {
		m := s.next(scheduler.Event_MESSAGE).Message
		if want := fmt.Sprintf("m%02d", i); string(m.Data) != want || m.ExecutorID.Value != "e1" {
			t.Fatalf("message %d = %q, want %q", i, m.Data, want)
		}
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_MESSAGE, Message: &scheduler.Call_Message{
		AgentID: mesos.AgentID{Value: c.AgentID()}, ExecutorID: mesos.ExecutorID{Value: "e1"}, Data: []byte("ping")}})
	if m := s.next(scheduler.Event_MESSAGE).Message; string(m.Data) != "echo:ping" {
		t.Fatalf("echo %q", m.Data)
	}
}

func TestExecutorResubscribesWithUnacknowledgedUpdates(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "reconnect", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	running := s.update("t1")
	s.ack(running)
	dir := c.Snapshot().Executors[0].Directory
	eventually(t, "ACKNOWLEDGED after re-subscription", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "acked.log"))
		return string(b) == "t1 TASK_RUNNING\n"
	})
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value == "t1" {
			t.Fatalf("replayed update forwarded twice: %s", ev.Update.Status.GetState())
		}
	}
}

func TestExecutorEnvironmentSandboxAndFilesRead(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	e := c.Snapshot().Executors[0]
	wantPrefix := filepath.Join(c.cfg.WorkDir, "slaves", c.AgentID(), "frameworks", s.fwID, "executors", "e1", "runs") + "/"
	if !strings.HasPrefix(e.Directory, wantPrefix) {
		t.Fatalf("sandbox %s, want under %s", e.Directory, wantPrefix)
	}
	env := readFile(t, c, filepath.Join(e.Directory, "env.txt"))
	u, _ := url.Parse(c.URL())
	for _, kv := range []string{
		"MESOS_AGENT_ENDPOINT=" + u.Host, "MESOS_FRAMEWORK_ID=" + s.fwID, "MESOS_EXECUTOR_ID=e1",
		"MESOS_DIRECTORY=" + e.Directory, "MESOS_SANDBOX=" + e.Directory, "MESOS_CHECKPOINT=0",
		"MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=5secs", "MESOS_SUBSCRIPTION_BACKOFF_MAX=2secs",
		"MESOS_SLAVE_ID=" + c.AgentID(), "MESOS_AGENT_ID=" + c.AgentID(), "MESOS_HTTP_COMMAND_EXECUTOR=0",
		"CUSTOM_VAR=custom", "PATH=", "ELASTICJOB_AGENT_CODEC=protobuf",
	} {
		if !strings.Contains(env, kv) {
			t.Errorf("env lacks %s:\n%s", kv, env)
		}
	}
	if out := readFile(t, c, filepath.Join(e.Directory, "stdout")); out != "test executor started\n" {
		t.Errorf("stdout %q", out)
	}
	assertFilesStatus(t, c, "/etc/passwd", http.StatusNotFound)
	assertFilesStatus(t, c, filepath.Join(e.Directory, "..", "..", "..", "..", "..", "..", "..", "..", "..", "etc", "passwd"), http.StatusNotFound)
	link := filepath.Join(e.Directory, "escape")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	assertFilesStatus(t, c, link, http.StatusNotFound)
}

func TestFilesReadOffsets(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	path := filepath.Join(c.Snapshot().Executors[0].Directory, "f.txt")
	if err := os.WriteFile(path, []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := filesRead(t, c, path, "-1", "")
	if got.Data != "" || got.Offset != 11 {
		t.Fatalf("offset=-1: %+v", got)
	}
	if got := filesRead(t, c, path, "6", "3"); got.Data != "wor" || got.Offset != 6 {
		t.Fatalf("slice: %+v", got)
	}
	if got := filesRead(t, c, path, "20", ""); got.Data != "" || got.Offset != 20 {
		t.Fatalf("past end: %+v", got)
	}
}

type filesReadResult struct {
	Data   string `json:"data"`
	Offset int64  `json:"offset"`
}

func filesRead(t *testing.T, c *Cluster, path, offset, length string) filesReadResult {
	t.Helper()
	q := url.Values{"path": {path}, "offset": {offset}}
	if length != "" {
		q.Set("length", length)
	}
	resp, err := http.Get(c.URL() + "/files/read?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("files/read %s: %s", path, resp.Status)
	}
	var r filesReadResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

func readFile(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	var data string
	eventually(t, "file "+filepath.Base(path), func() bool {
		resp, err := http.Get(c.URL() + "/files/read?" + url.Values{"path": {path}, "offset": {"0"}}.Encode())
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var r filesReadResult
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
			return false
		}
		data = r.Data
		return data != ""
	})
	return data
}

func assertFilesStatus(t *testing.T, c *Cluster, path string, want int) {
	t.Helper()
	resp, err := http.Get(c.URL() + "/files/read?" + url.Values{"path": {path}, "offset": {"0"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("files/read %s: %d, want %d", path, resp.StatusCode, want)
	}
}

func TestStateEndpoint(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	resp, err := http.Get(c.URL() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		ID         string `json:"id"`
		Frameworks []struct {
			ID        string `json:"id"`
			Executors []struct {
				ID, Directory string
				Tasks         []struct{ ID, State string }
			} `json:"executors"`
		} `json:"frameworks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.ID != c.AgentID() || len(st.Frameworks) != 1 || len(st.Frameworks[0].Executors) != 1 {
		t.Fatalf("state %+v", st)
	}
	e := st.Frameworks[0].Executors[0]
	if e.ID != "e1" || e.Directory == "" || len(e.Tasks) != 1 || e.Tasks[0].ID != "t1" || e.Tasks[0].State != "TASK_RUNNING" {
		t.Fatalf("executor %+v", e)
	}
}

// A KILL of a launched task whose executor has no connection at that moment (a recovered
// executor not yet subscribed again after the agent's restart) is kept and sent once the
// executor subscribes: the scheduler kills a replaced task once, and that kill must not be
// lost to the agent's restart.
func TestKillWhileTheExecutorIsAwayIsDelivered(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.ack(s.update("t1"))
	c.mu.Lock()
	var e *executor
	for _, fw := range c.frameworks {
		for _, ex := range fw.executors {
			e = ex
		}
	}
	conn := e.stream
	e.stream = nil // away: as a recovered executor is until it subscribes again
	c.mu.Unlock()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	c.mu.Lock()
	due := slices.Clone(e.killsDue)
	c.executorAPI.executorSubscribed(e, conn, nil)
	c.mu.Unlock()
	if !slices.Equal(due, []string{"t1"}) {
		t.Fatalf("kills due while the executor was away: %v", due)
	}
	if st := s.update("t1"); st.GetState() != mesos.TASK_KILLED || st.GetSource() != mesos.SOURCE_EXECUTOR {
		t.Fatalf("kill once the executor is back: %s %s", st.GetState(), st.GetSource())
	}
}
