package conformance

import (
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Engine is one engine under test, as a tier gives it to the suite.
type Engine interface {
	// Name names the engine in messages ("embedded", "mesos-1.11", "kubernetes-1.37").
	Name() string
	// Caps is what the engine can do and how its shards report.
	Caps() Caps
	// Cluster gives one case what it runs on (its own cluster, or a share of one: a
	// namespace), stopped or cleaned at t's cleanup.
	Cluster(t *testing.T) Cluster
}

// Cluster is what one case runs on.
type Cluster interface {
	// Start starts a scheduler against the cluster on dataDir and waits until it answers
	// and is connected to the engine; starting one again on the same dataDir after Kill9 is a
	// scheduler restart. Stopped at t's cleanup.
	Start(t *testing.T, dataDir string) *Scheduler
	// Lose makes the node or agent that runs taskID lost, as a machine that died is to the
	// engine: the task's processes die with it, and the engine (or its operator) tells the
	// scheduler the task is gone.
	Lose(t *testing.T, s *Scheduler, taskID string)
}

// Scheduler is one scheduler process a Cluster started.
type Scheduler struct {
	*harness.Proc
	Base   string // http://127.0.0.1:PORT
	Client *http.Client
}

// Report is how a shard's process reports its start and end to the suite.
type Report int

const (
	// ReportFile: the shard runs on this host and appends to a file (embedded, real Mesos
	// with the posix launcher).
	ReportFile Report = iota
	// ReportHTTP: the shard runs in a container on the host network and posts to the
	// suite's recorder with busybox wget (Kubernetes pods).
	ReportHTTP
)

// Caps is what an engine declares to the suite.
type Caps struct {
	Report Report
	// CPUs is what the one node or agent gives tasks (the why-waiting case fills it).
	CPUs float64
	// Wait bounds every wait for the engine's real processes (default 2 minutes); nothing
	// asserts on how long anything took.
	Wait time.Duration
	// Parallel runs the cases side by side (each has its own cluster and resources).
	Parallel bool
	// Skip names the cases the engine cannot do, with the reason; they are skipped saying so.
	Skip map[string]string
}

func (c Caps) wait() time.Duration {
	if c.Wait <= 0 {
		return 2 * time.Minute
	}
	return c.Wait
}
