//go:build e2e

package realmesos

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/conformance"
)

// TestConformance runs the table of behaviours every engine passes (e2e/conformance) on a
// real Mesos 1.11 master and agent: each case with its own master and agent (2 CPUs), side
// by side.
func TestConformance(t *testing.T) {
	requireMesos(t)
	conformance.Run(t, realMesos{})
}

// realMesos is the real-Mesos engine; its shards run on this host (the posix launcher) and
// report through a file.
type realMesos struct{}

func (realMesos) Name() string { return "mesos-1.11" }

func (realMesos) Caps() conformance.Caps {
	return conformance.Caps{Report: conformance.ReportFile, CPUs: 2, Wait: waitLong, Parallel: true}
}

func (realMesos) Cluster(t *testing.T) conformance.Cluster {
	return &mesosConformance{m: startMesos(t, mesosOpts{})}
}

type mesosConformance struct {
	m      *mesosCluster
	starts int
}

// Start starts a scheduler against the master (again on dataDir: the same framework id) and
// waits for its subscription.
func (c *mesosConformance) Start(t *testing.T, dataDir string) *conformance.Scheduler {
	t.Helper()
	c.starts++
	s := startScheduler(t, fmt.Sprintf("scheduler%d", c.starts), dataDir, schedOpts{mesosURL: c.m.masterURL()})
	eventually(t, waitLong, s.subscribed, "%s to subscribe", s.Name)
	return &conformance.Scheduler{Proc: s.Proc, Base: s.base, Client: httpClient}
}

// Lose: the agent dies with SIGKILL and every process of its sandboxes with it (a machine
// gone); the operator tells the master it is gone for good (MARK_AGENT_GONE, whose tasks the
// master reports TASK_GONE_BY_OPERATOR); a new machine's agent joins.
func (c *mesosConformance) Lose(t *testing.T, s *conformance.Scheduler, taskID string) {
	t.Helper()
	id := agentOf(t, c.m)
	if a := s.AgentOf(t, taskID); a != id {
		t.Fatalf("task %s runs on %q, not on the agent %s", taskID, a, id)
	}
	c.m.agent.kill9()
	killUnder(c.m.agentDir())
	body := `{"type":"MARK_AGENT_GONE","mark_agent_gone":{"agent_id":{"value":"` + id + `"}}}`
	req, err := http.NewRequest(http.MethodPost, c.m.masterURL()+"/api/v1", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("MARK_AGENT_GONE %s: %s", id, resp.Status)
	}
	c.m.agent = c.m.startAgent()
	eventually(t, waitLong, func() bool { return c.m.activeAgents() == 1 }, "a new agent to register")
}

// killUnder kills with SIGKILL the processes whose working directory is under dir.
func killUnder(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
