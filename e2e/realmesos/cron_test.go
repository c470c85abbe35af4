//go:build e2e

package realmesos

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCronJobEndToEnd: a cron job on a real Mesos master and agent. The agent fetches the
// executor from the scheduler over HTTP (nothing installed on the agent), the shards run on it,
// the history records every run, and the framework subscribed with checkpointing on and a
// one-week failover timeout. A file:// app URL is refused, since agents may be remote.
func TestCronJobEndToEnd(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	s := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-cron"})[0]
	eventually(t, waitLong, func() bool {
		return strings.Contains(m.masterLog(), "Subscribing framework 'ej-cron' with checkpointing enabled")
	}, "the master to log the subscription with checkpointing enabled")
	fw := framework(t, m, "ej-cron")
	if !fw.Checkpoint || fw.FailoverTimeout != 7*24*3600 {
		t.Fatalf("framework at the master: checkpoint=%v failover_timeout=%v, want true and one week", fw.Checkpoint, fw.FailoverTimeout)
	}

	code, body := s.do(http.MethodPost, "/api/app", map[string]any{"appName": "local", "appURL": "file:///opt/apps/local.tar.gz",
		"bootstrapScript": "bin/start.sh"})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "file:// URL") || !strings.Contains(string(body), "agents") {
		t.Fatalf("file:// app with remote agents: %d %s, want 400 saying why", code, body)
	}

	s.publishApp("recorder", recorderURL(), "bin/record.sh")
	out := outDir(t)
	s.registerJob("cron_job", "recorder", "* * * * * ?", out, 2)
	eventually(t, waitLong, func() bool {
		n := perItem(runsIn(t, out))
		return n[0] >= 3 && n[1] >= 3
	}, "both shards to run 3 times on the real agent (runs: %v)", lateRuns(t, out))
	runs := runsIn(t, out)
	noTaskRanTwice(t, runs)
	eventually(t, waitLong, func() bool { return recorded(s.executions("cron_job"), runs) }, "the history to record every run")
	agentID := agentOf(t, m)
	for _, r := range runs { // each ended: the task view names its agent from history
		if a := s.taskAgent(r.TaskID); a != agentID {
			t.Fatalf("task %s ran on %q, not on the real agent %s", r.TaskID, a, agentID)
		}
	}

	// The executor came from the scheduler: the fetcher downloaded the content-addressed URL
	// into its cache and the sandbox holds the very same binary.
	sum := fileSHA256(t, executorBin)
	want := s.base + "/artifacts/executor/" + sum + "/elasticjob-executor"
	fetched := false
	for _, f := range m.sandboxFiles("stderr") { // the Mesos fetcher logs into the sandbox
		b, _ := os.ReadFile(f)
		fetched = fetched || strings.Contains(string(b), "Fetched '"+want+"'")
	}
	if !fetched {
		t.Fatalf("no sandbox shows the executor fetched from %s", want)
	}
	sandboxed := m.sandboxFiles("elasticjob-executor")
	if len(sandboxed) == 0 {
		t.Fatal("no executor binary in the agent's sandboxes")
	}
	cached, _ := filepath.Glob(filepath.Join(m.fetchCacheDir(), "*", "*elasticjob-executor"))
	for _, f := range append(sandboxed, cached...) {
		if got := fileSHA256(t, f); got != sum {
			t.Fatalf("executor %s has sha256 %s, want %s", f, got, sum)
		}
	}
	if len(cached) == 0 {
		t.Fatalf("the executor is not in the agent's fetcher cache %s (cache: true)", m.fetchCacheDir())
	}
}

// TestCheckpointingCanBeTurnedOff: mesos_checkpoint=false and mesos_failover_timeout reach the
// master.
func TestCheckpointingCanBeTurnedOff(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-nocheckpoint",
		extra: []string{"--mesos-checkpoint=false", "--mesos-failover-timeout=2h"}})
	eventually(t, waitLong, func() bool {
		return strings.Contains(m.masterLog(), "Subscribing framework 'ej-nocheckpoint' with checkpointing disabled")
	}, "the master to log the subscription with checkpointing disabled")
	if fw := framework(t, m, "ej-nocheckpoint"); fw.Checkpoint || fw.FailoverTimeout != 7200 {
		t.Fatalf("framework at the master: checkpoint=%v failover_timeout=%v, want false and 7200", fw.Checkpoint, fw.FailoverTimeout)
	}
}

// recorded reports whether every run appears in the history as a success.
func recorded(rows []execution, runs []jobRun) bool {
	ok := map[string]bool{}
	for _, r := range rows {
		if r.Success && r.CompleteTime != "" {
			ok[r.TaskID] = true
		}
	}
	for _, r := range runs {
		if !ok[r.TaskID] {
			return false
		}
	}
	return true
}

// framework returns what the leading master knows of the named framework.
func framework(t *testing.T, m *mesosCluster, name string) frameworkState {
	t.Helper()
	st, ok := m.state(max(m.leader(), 0))
	if ok {
		for _, f := range st.Frameworks {
			if f.Name == name {
				return f
			}
		}
	}
	t.Fatalf("framework %s is not known to the master", name)
	return frameworkState{}
}

// agentOf returns the id of the cluster's one agent.
func agentOf(t *testing.T, m *mesosCluster) string {
	t.Helper()
	var st struct {
		ID string `json:"id"`
	}
	resp, err := httpClient.Get("http://127.0.0.1:" + itoa(m.agent.port) + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := jsonDecode(resp.Body, &st); err != nil || st.ID == "" {
		t.Fatalf("agent /state: %v", err)
	}
	return st.ID
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lateRuns formats the runs so far when a wait times out.
type lateRunsT struct {
	t   *testing.T
	out string
}

func lateRuns(t *testing.T, out string) lateRunsT { return lateRunsT{t, out} }
func (l lateRunsT) String() string                { return fmtMap(perItem(runsIn(l.t, l.out))) }
