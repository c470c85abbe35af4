package engine

import (
	"context"
	"errors"
	"time"
)

// Capabilities is what an engine declares it can do (see the package documentation for
// what each one means to the scheduler and the API).
type Capabilities struct {
	// Checkpointing: the engine's tasks survive a restart of the scheduler (and of its
	// agents), and a new term takes them over by reconciliation.
	Checkpointing bool `json:"checkpointing"`
	// ExecutorSharing: one executor runs many tasks of an app on an agent (Mesos); without
	// it every task has an executor of its own (a Kubernetes pod).
	ExecutorSharing bool `json:"executorSharing"`
	// Logs: a task's stdout and stderr can be read (Logs).
	Logs bool `json:"logs"`
	// Sandboxes: an app's running executors' sandboxes can be listed (Sandboxes).
	Sandboxes bool `json:"sandboxes"`
	// ClusterView: the engine describes its agents for the cluster page (ClusterView).
	ClusterView bool `json:"clusterView"`
	// Capacity: the engine lists its agents with their totals (Inventory), so that a job
	// that could never fit is refused at registration.
	Capacity bool `json:"capacity"`
	// Accepts is how many of a launch round's ACCEPTs may be in flight together, for
	// different agents (the Mesos client: each is an HTTP call of its own); ≤ 1: one at a
	// time. Not shown by the API.
	Accepts int `json:"-"`
	// RoundTasks is how many tasks a launch round places at most on this engine's agents
	// when it is one cluster of several (0: no bound of its own): about what it launches in
	// a round's time. The round returns when every cluster's ACCEPTs were answered, so a
	// cluster given more than it launches in that time would hold every cluster's next
	// round; what is left waits for the next round, which follows at once. Not shown by
	// the API.
	RoundTasks int `json:"-"`
}

// Declarer is the API side of an engine (engine/mesos/agents.Engine, kube.Cluster): it
// declares the same Capabilities as the engine's Driver.
type Declarer interface {
	Capabilities() Capabilities
}

// InFlight is how many ACCEPTs a launch round may have in flight together: Accepts, at
// least 1.
func (c Capabilities) InFlight() int { return max(c.Accepts, 1) }

// ClusterRounds is an optional part of a Driver made of several clusters (engine/clusters):
// each cluster's own RoundTasks, by its name.
type ClusterRounds interface {
	RoundTasks(cluster string) int
}

// Lanes is an optional part of a Driver made of several clusters (engine/clusters): each
// cluster's ACCEPTs go in a lane of their own, up to that cluster's own Accepts in flight,
// beside the other lanes. Without it a round's ACCEPTs share one lane of Capabilities'
// Accepts, the fewest any cluster takes: a cluster that takes one at a time (or is slow to
// launch) would hold every other cluster's ACCEPTs to its pace.
type Lanes interface {
	// Lane is the lane of an ACCEPT on the offers of agentID (as the Driver names it) and
	// how many of that lane's ACCEPTs may be in flight together (at least 1).
	Lane(agentID string) (lane string, inFlight int)
}

// ErrNotFound is returned (wrapped) for a log, sandbox, agent or task the engine does not
// have (any more).
var ErrNotFound = errors.New("not found")

// ErrInvalid is returned (wrapped) for a malformed request: a task id that is not one.
var ErrInvalid = errors.New("invalid")

// ErrUnavailable is returned (wrapped) when the engine cannot answer now but may shortly
// (this instance is not leading the engine, the engine's API is out of reach). An ACCEPT
// that fails so (the Mesos master's connection refused or its 503 / 429; the Kubernetes
// API server's connection refused, or its 429 or a 5xx but 500 / 504) is rolled back like
// any failed one, and the launcher waits before its next launch round, longer each time
// the engine is found unavailable again, until an ACCEPT succeeds or the engine is
// subscribed to again.
var ErrUnavailable = errors.New("unavailable")

// ErrOutcomeUnknown is returned (wrapped) by a call that was sent, or may have been, and got
// no answer (the connection closed or reset under it, a timeout; a Kubernetes API server's
// 500, 504 or 408 to a pod's creation): the engine may have carried it out. An ACCEPT that
// fails so is not rolled back: its tasks stay STAGING, and reconciliation tells whether the
// engine got them (a master can launch the tasks and die before it answers: rolling back
// would launch them a second time).
var ErrOutcomeUnknown = errors.New("outcome unknown")

// LogChunk is a piece of a task's log: Data from Offset, of a log Size bytes long in all.
type LogChunk struct {
	Offset, Size int64
	Data         string
}

// Logs reads task logs.
type Logs interface {
	// TaskLog reads length bytes (< 0: to the end) of a task's stream ("stdout",
	// "stderr") from offset (< 0: from the end). A log the engine no longer has is
	// ErrNotFound; a task id that is not one is ErrInvalid.
	TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (LogChunk, error)
}

// TaskFile is one entry of a task's directory.
type TaskFile struct {
	Path  string    `json:"path"` // relative to the task's directory
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"` // as ls shows it: "drwx------", "-rw-r--r--", "Lrwxrwxrwx"
	MTime time.Time `json:"mtime"`
}

// TaskFiles lists a task's files, an optional capability: the Mesos
// engine has it (the agent's /files/browse); an engine without it answers
// the API's listing and download with "not supported".
type TaskFiles interface {
	// TaskFiles lists the directory dir (relative, "" for the task's own)
	// of the task's directory in its sandbox. Its files are read with
	// TaskLog, the relative path as the stream.
	TaskFiles(ctx context.Context, taskID, dir string) ([]TaskFile, error)
}

// Sandbox is where one of an app's executors runs: a Mesos executor's sandbox directory,
// or a Kubernetes pod.
type Sandbox struct {
	Hostname, AgentID, ExecutorID, Path string
}

// Sandboxes lists sandboxes.
type Sandboxes interface {
	// Sandboxes lists the sandboxes of an app's running executors (none: empty).
	Sandboxes(ctx context.Context, app string) ([]Sandbox, error)
}

// View is an engine's part of the cluster page.
type View struct {
	// Name is the engine's key in the page ("mesos", "kubernetes").
	Name string
	// Detail is the engine's own description (JSON-encoded as it is).
	Detail any
	// Agents are the engine's agents as it describes them (JSON-encoded; nil: none).
	Agents any
	// AgentsError is why the agents could not be read ("": they could).
	AgentsError string
}

// ClusterView describes an engine's agents for the cluster page.
type ClusterView interface {
	// ClusterView answers even when the agents cannot be read (View.AgentsError).
	ClusterView(ctx context.Context) View
}
