//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/conformance"
	"github.com/ejcloud/elasticjob/e2e/harness"
)

// TestConformance runs the table of behaviours every engine passes (e2e/conformance) on the
// embedded engine: each case with its own scheduler and embedded agent, side by side.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, embedded{})
}

// embedded is the embedded engine: the scheduler's own master and agent (2 CPUs, as
// startScheduler gives it); its shards run on this host and report through a file.
type embedded struct{}

func (embedded) Name() string { return "embedded" }

func (embedded) Caps() conformance.Caps {
	return conformance.Caps{Report: conformance.ReportFile, CPUs: 2, Wait: waitLong, Parallel: true}
}

func (embedded) Cluster(*testing.T) conformance.Cluster { return &embeddedCluster{} }

type embeddedCluster struct{ dataDir string }

func (c *embeddedCluster) Start(t *testing.T, dataDir string) *conformance.Scheduler {
	c.dataDir = dataDir
	s := startScheduler(t, schedOpts{dataDir: dataDir})
	return &conformance.Scheduler{Proc: s.Proc, Base: s.base}
}

// Lose: the agent is inside the scheduler, so the machine's loss is that of every process it
// runs: the executors and their tasks are killed with SIGKILL.
func (c *embeddedCluster) Lose(t *testing.T, _ *conformance.Scheduler, taskID string) {
	if pids := harness.KillSandboxProcs(filepath.Join(c.dataDir, "mesos")); len(pids) == 0 {
		t.Fatalf("no process of %s to kill", taskID)
	}
}
