package engine

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// Offer is a resource offer summarised for the launcher (a Mesos offer, or a Kubernetes node's free resources): scalar cpus and mem usable by the
// framework's role (its own role and "*").
type Offer struct {
	ID, AgentID, Hostname string
	CPUs, MemMB           float64
}

// ExecutorSpec describes the custom executor a task runs in. Every task of one executor id
// must carry the same spec (Mesos rejects a task whose ExecutorInfo differs from the running
// executor's). CPUs and MemMB are always sent; see the package documentation.
type ExecutorSpec struct {
	ID, Name    string
	CPUs, MemMB float64
	// Command runs through /bin/sh -c when Shell is true; otherwise it is the program path and
	// Args its argv (argv[0] included), as in Mesos' CommandInfo.
	Command string
	Shell   bool
	Args    []string
	URIs    []URI
	Env     map[string]string
	// User is the OS user a Mesos agent runs the executor and its tasks as (CommandInfo.user,
	// its namespace's mesos_task_users entry); "" leaves it to FrameworkInfo.user.
	User string
}

// URI is a file the Mesos fetcher downloads into the sandbox before the executor starts.
type URI struct {
	Value                      string
	Executable, Extract, Cache bool
}

// TaskLaunch is one task to launch on the agent of the accepted offers.
type TaskLaunch struct {
	TaskID, Name, AgentID string
	CPUs, MemMB           float64
	// Task is what the executor needs to run the shard (job, app, sharding context). Each
	// engine hands it over in its own way: the Mesos client encodes it (Task.Marshal) as
	// TaskInfo.data; the Kubernetes engine reads it to build the pod and passes the same
	// encoding in the pod's environment.
	Task      jobs.TaskData
	Executor  ExecutorSpec
	KillGrace time.Duration
}

// Status is a task status update in the scheduler's terms (package task): its State, and
// the Reason and Source of the update ("" when the engine gives none). Each engine makes
// them at its edge: the Mesos client from its protobuf enums, the Kubernetes engine from
// the pod's status and the executor's reports.
type Status struct {
	TaskID, AgentID, ExecutorID string
	State                       task.State
	Reason                      task.Reason
	Source                      task.Source
	Message                     string
	Data                        []byte
	Timestamp                   time.Time
	// UnreachableSince is, for TASK_UNREACHABLE, when the engine lost
	// sight of the task's agent (Mesos unreachable_time; zero: unknown),
	// the same in every answer and to every leader.
	UnreachableSince time.Time
	// LostCluster names, for TASK_UNREACHABLE, the cluster whose engine was lost as a
	// whole (several clusters: the composition reports each task there so); "": the task's
	// agent alone. The scheduler counts such a task lost past that cluster's own bound.
	LostCluster string
	Healthy     *bool
}

// TaskRef names a task for explicit reconciliation.
type TaskRef struct{ TaskID, AgentID string }

// Handler is implemented by the scheduler. Methods are called from one goroutine, in event order.
type Handler interface {
	// Subscribed is called after every (re)subscription; the scheduler persists the id and reconciles.
	Subscribed(ctx context.Context, frameworkID string)
	Offers(ctx context.Context, offers []Offer)
	Rescinded(ctx context.Context, offerID string)
	// UpdateAsync takes a status update without making the event stream wait: it returns at
	// once and calls done later, with handled true once the update's state change is
	// committed; the client then acknowledges it (when it carries a uuid), off the stream's
	// goroutine; with handled false it does not, so Mesos resends the update. A handler can so
	// commit a burst of updates together. Updates of one task still arrive in order: Mesos
	// sends a task's next update only after the previous one is acknowledged.
	UpdateAsync(ctx context.Context, s Status, done func(handled bool))
	Message(ctx context.Context, agentID, executorID string, data []byte)
	// Failure reports a lost agent (executorID "") or a terminated executor (status = exit status).
	Failure(ctx context.Context, agentID, executorID string, status *int32)
	// Disconnected reports the loss of a live subscription; all outstanding offers are void.
	Disconnected(ctx context.Context, err error)
}

// ExecutorReport is what an executor that runs without a Mesos agent (in a Kubernetes pod)
// sends the scheduler over its API: a status update of its task (State set), or a
// framework message (State empty: a daemon run report in Data). The scheduler turns it
// into a Status or a Message for its Handler.
type ExecutorReport struct {
	TaskID     string     `json:"taskId"`
	ExecutorID string     `json:"executorId,omitempty"`
	AgentID    string     `json:"agentId,omitempty"` // the node
	State      task.State `json:"state,omitempty"`
	Message    string     `json:"message,omitempty"`
	// Data is the status data (the executor's Report JSON) or the message.
	Data []byte `json:"data,omitempty"`
	// Stdout and Stderr are the tails of the task's output, sent with a terminal state: kept
	// by the scheduler once the pod is gone.
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
}
