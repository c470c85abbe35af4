package embedded

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
)

// disk is an injected disk usage.
type disk struct {
	mu    sync.Mutex
	usage float64
}

func (d *disk) set(u float64) { d.mu.Lock(); d.usage = u; d.mu.Unlock() }
func (d *disk) get(string) (float64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.usage, nil
}

// oldSandbox makes a sandbox of an earlier agent id, terminated at ended.
func oldSandbox(t *testing.T, work, agent string, ended time.Time) string {
	t.Helper()
	dir := filepath.Join(work, "slaves", agent, "frameworks", "fw", "executors", "x", "runs", "c1")
	if err := os.MkdirAll(filepath.Join(dir, "tasks", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c1", filepath.Join(filepath.Dir(dir), "latest")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, ended, ended); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Sandboxes of terminated executors go after sandboxgc.MaxAge for the disk usage of
// the moment (oldest first, sandboxes of earlier agent ids too); a running
// executor's sandbox stays even on a full disk.
func TestCollectGarbageByAgeAndDiskUsage(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	d := &disk{}
	work := t.TempDir()
	old := oldSandbox(t, work, "old-agent", clk.Now().Add(-100*time.Hour))
	c := newCluster(t, func(cfg *Config) {
		cfg.WorkDir, cfg.Clock, cfg.DiskUsage = work, clk, d.get
		cfg.GCDelay, cfg.GCDiskHeadroom = 10*time.Hour, 0.1
		cfg.DiskWatchInterval = 10000 * time.Hour // after its run at start, the loop stays out of the way
	})
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "finish", execInfo(t, "done", "1", 0.1, 32), 1, 64),
		taskInfo(c, "t2", "hang", execInfo(t, "busy", "1", 0.1, 32), 1, 64))
	for range 3 { // RUNNING t1, FINISHED t1, RUNNING t2 in some order
		s.ack(s.nextNot(scheduler.Event_OFFERS).Update.Status)
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_SHUTDOWN, Shutdown: &scheduler.Call_Shutdown{
		ExecutorID: mesos.ExecutorID{Value: "done"}, AgentID: mesos.AgentID{Value: c.AgentID()}}})
	s.next(scheduler.Event_FAILURE)
	done, busy := listedSandbox(t, c, "done"), listedSandbox(t, c, "busy")

	eventually(t, "the earlier agent's sandbox collected at start", func() bool { return !exists(old) })
	if exists(filepath.Join(work, "slaves", "old-agent")) {
		t.Error("empty directories of the old sandbox left")
	}
	clk.Advance(5 * time.Hour)
	if n := c.CollectGarbage(); n != 0 || !exists(done) {
		t.Fatalf("at 5h of 9h allowed: removed %d", n)
	}
	d.set(0.5) // now 4h allowed
	if n := c.CollectGarbage(); n != 1 || exists(done) || !exists(busy) {
		t.Fatalf("at 5h of 4h allowed: removed %d, done there %v, busy there %v", n, exists(done), exists(busy))
	}
	if got := listedSandbox(t, c, "done"); got != "" {
		t.Errorf("/state still lists the removed sandbox %s", got)
	}
	d.set(1) // full disk: nothing terminated is kept, the running executor is
	if n := c.CollectGarbage(); n != 0 || !exists(busy) {
		t.Fatalf("full disk: removed %d, busy there %v", n, exists(busy))
	}
}

// listedSandbox finds an executor's sandbox in /state (running or completed).
func listedSandbox(t *testing.T, c *Cluster, executorID string) string {
	t.Helper()
	ex, err := agents.New(c.URL()).Executors(t.Context(), c.AgentID(), executorID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ex {
		if e.ID == executorID {
			return e.Directory
		}
	}
	return ""
}

// The GC loop runs at start and then every DiskWatchInterval of the
// injected clock.
func TestGCLoopFollowsTheClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	work := t.TempDir()
	first := oldSandbox(t, work, "a1", clk.Now().Add(-time.Hour))
	newCluster(t, func(cfg *Config) {
		cfg.WorkDir, cfg.Clock, cfg.DiskUsage = work, clk, (&disk{}).get
		cfg.GCDelay, cfg.DiskWatchInterval = 2*time.Hour, time.Minute
	})
	second := oldSandbox(t, work, "a2", clk.Now())
	eventually(t, "the first sandbox kept, the loop waiting", func() bool { _, ok := clk.Pending(); return ok })
	if !exists(first) || !exists(second) {
		t.Fatal("a sandbox younger than 1.8h was removed")
	}
	clk.Advance(2 * time.Hour)
	eventually(t, "both sandboxes collected after 2h", func() bool {
		clk.Advance(time.Minute)
		return !exists(first) && !exists(second)
	})
}

// After a restart on the same work directory the agent keeps its id and
// lists the sandboxes of the executors that ran before, so their task
// logs stay readable: under the framework once it re-subscribes, and as a
// completed framework until then.
func TestRestartListsEarlierSandboxes(t *testing.T) {
	work := t.TempDir()
	mk := func() *Cluster { return newCluster(t, func(cfg *Config) { cfg.WorkDir = work }) }
	c1 := mk()
	s := subscribe(t, c1, frameworkInfo())
	s.launch(s.offer(), taskInfo(c1, "t1", "finish", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.ack(s.update("t1"))
	s.ack(s.update("t1"))
	dir := c1.Snapshot().Executors[0].Directory
	s.close()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := mk()
	if c2.AgentID() != c1.AgentID() {
		t.Fatalf("agent id changed: %s → %s", c1.AgentID(), c2.AgentID())
	}
	var st struct {
		Completed []struct {
			ID        string `json:"id"`
			Completed []struct {
				ID, Directory string
			} `json:"completed_executors"`
		} `json:"completed_frameworks"`
	}
	resp, err := http.Get(c2.URL() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Completed) != 1 || st.Completed[0].ID != s.fwID || len(st.Completed[0].Completed) != 1 ||
		st.Completed[0].Completed[0].Directory != dir {
		t.Fatalf("completed frameworks after restart: %+v %v", st, err)
	}
	if got := listedSandbox(t, c2, "e1"); got != dir {
		t.Fatalf("sandbox of e1 after restart: %q, want %q", got, dir)
	}
	if out := readFile(t, c2, filepath.Join(dir, "stdout")); out != "test executor started\n" {
		t.Fatalf("stdout after restart %q", out)
	}
	info := frameworkInfo()
	info.ID = &mesos.FrameworkID{Value: s.fwID}
	subscribe(t, c2, info)
	if got := listedSandbox(t, c2, "e1"); got != dir {
		t.Fatalf("sandbox of e1 after re-subscription: %q", got)
	}
}
