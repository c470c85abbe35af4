package workflow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/task"
)

// RunState is a run's state.
type RunState string

// Run states. QUEUED waits for a slot under maxConcurrentRuns (or for the
// leader to start it); the last three are final.
const (
	RunQueued    RunState = "QUEUED"
	RunRunning   RunState = "RUNNING"
	RunSucceeded RunState = "SUCCEEDED" // every node succeeded or was skipped by its rule
	RunFailed    RunState = "FAILED"    // a node failed, or the run timed out
	RunCancelled RunState = "CANCELLED"
)

// Final reports whether a run state is final.
func (s RunState) Final() bool { return s == RunSucceeded || s == RunFailed || s == RunCancelled }

// NodeState is a node's state within a run.
type NodeState string

// Node states. RUNNING means handed to its job (queued in the job's ready
// queue, or with tasks launched); the API tells the two apart.
const (
	NodePending   NodeState = "PENDING"
	NodeRunning   NodeState = "RUNNING"
	NodeSucceeded NodeState = "SUCCEEDED" // every shard finished
	NodeFailed    NodeState = "FAILED"    // a shard failed, or the node could not start
	NodeSkipped   NodeState = "SKIPPED"   // its rule can no longer be met, or the run was cancelled first
	NodeCancelled NodeState = "CANCELLED" // killed by a cancel or the run's timeout
)

// Final reports whether a node state is final.
func (s NodeState) Final() bool {
	return s == NodeSucceeded || s == NodeFailed || s == NodeSkipped || s == NodeCancelled
}

// Sources of runs.
const (
	SourceCron = "CRON"
	SourceAPI  = "API"
	// SourceBackfill: a run a backfill (package backfill) queued for one
	// past instant of the workflow's plan (Run.ScheduledAt).
	SourceBackfill = "BACKFILL"
)

// Errors of run operations (the API maps them to 409 and 404).
var (
	ErrRunFinished   = errors.New("run finished")
	ErrNotRetryable  = errors.New("run not retryable")
	ErrRunNotFound   = errors.New("workflow run not found")
	ErrNotFound      = errors.New("workflow not found")
	ErrExists        = errors.New("workflow already exists")
	ErrDisabled      = errors.New("workflow disabled")
	ErrTooManyQueued = errors.New("too many queued runs")
)

// Run is one run of a workflow, at /state/workflow/{name}/{runId}.
type Run struct {
	Workflow string   `json:"workflow"`
	ID       string   `json:"runId"`
	State    RunState `json:"state"`
	Source   string   `json:"source"` // CRON, API or BACKFILL
	// ScheduledAt is the nominal instant a backfill's run stands for (its
	// nodes' tasks get it as ELASTICJOB_SCHEDULED_TIME); Backfill is that
	// backfill's id.
	ScheduledAt    time.Time `json:"scheduledAt,omitzero"`
	Backfill       string    `json:"backfill,omitempty"`
	Parameter      *string   `json:"parameter,omitempty"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	// Attempt is 1, plus one per retry.
	Attempt        int       `json:"attempt"`
	TimeoutSeconds int       `json:"timeoutSeconds,omitempty"` // the workflow's when the run was created
	CreatedAt      time.Time `json:"createdAt"`
	StartedAt      time.Time `json:"startedAt,omitzero"` // of the current attempt
	EndedAt        time.Time `json:"endedAt,omitzero"`
	// Reason says why the run failed or was cancelled.
	Reason string    `json:"reason,omitempty"`
	Cancel *Cancel   `json:"cancel,omitempty"`
	Nodes  []NodeRun `json:"nodes"`
	// Version is the registry node's version (compare-and-set).
	Version int64 `json:"-"`
}

// Cancel is a request to end a run early: by a user, or by its timeout.
type Cancel struct {
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"`
	TimedOut bool      `json:"timedOut,omitempty"`
}

// NodeRun is one node of a run: its definition (from the workflow when the
// run was created) and its state.
type NodeRun struct {
	ID           string    `json:"id"`
	Job          string    `json:"job"`
	DependsOn    []string  `json:"dependsOn,omitempty"`
	Trigger      Rule      `json:"trigger"`
	JobParameter *string   `json:"jobParameter,omitempty"`
	State        NodeState `json:"state"`
	// Attempt is 1, plus one per retry of the run that ran the node again.
	Attempt int `json:"attempt"`
	// RunKey is the idempotency key of the node's execution of its job
	// (GET /api/job/trigger/{key} while it runs).
	RunKey string `json:"runKey,omitempty"`
	// Parameter is the jobParameter the node's execution was queued with.
	Parameter *string   `json:"parameter,omitempty"`
	QueuedAt  time.Time `json:"queuedAt,omitzero"`  // handed to its job
	StartedAt time.Time `json:"startedAt,omitzero"` // its first shard started
	EndedAt   time.Time `json:"endedAt,omitzero"`   // its last shard ended (or it was skipped)
	Shards    []Shard   `json:"shards,omitempty"`
	// Outputs is the union of its shards' outputs (on a key several shards
	// wrote, the highest sharding item's value).
	Outputs    map[string]string `json:"outputs,omitempty"`
	SkipReason string            `json:"skipReason,omitempty"`
	Message    string            `json:"message,omitempty"` // why it failed or was cancelled
}

// Shard is how one shard of a node's execution ended (its last attempt).
type Shard struct {
	Item      int               `json:"shardingItem"`
	TaskID    string            `json:"taskId"`
	State     task.State        `json:"state"` // the task's terminal state
	Message   string            `json:"message,omitempty"`
	StartedAt time.Time         `json:"startedAt,omitzero"`
	EndedAt   time.Time         `json:"endedAt,omitzero"`
	Outputs   map[string]string `json:"outputs,omitempty"`
}

// NewRun makes a QUEUED run of c.
func NewRun(c Config, id, source string, parameter *string, key string, now time.Time) Run {
	if parameter == nil {
		parameter = c.Parameter
	}
	return Run{Workflow: c.Name, ID: id, State: RunQueued, Source: source, Parameter: parameter, IdempotencyKey: key,
		Attempt: 1, TimeoutSeconds: c.TimeoutSeconds, CreatedAt: now.UTC(), Nodes: c.Snapshot()}
}

// NewRunID is a run id: the UTC time to the millisecond and a suffix
// ("cron" for a cron fire: the same fire always gets the same id; random
// for a trigger), e.g. 20250301T020000.000Z-cron.
func NewRunID(at time.Time, suffix string) string {
	if suffix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		suffix = hex.EncodeToString(b[:])
	}
	return at.UTC().Format("20060102T150405.000Z") + "-" + suffix
}

// NodeKey is the idempotency key of a node's execution in one attempt:
// the same node of the same run and attempt always gets the same key, so a
// start issued twice queues one execution. The key of a workflow of a
// namespace other than the default one carries the namespace (as its name
// does: namespace.Key), so the execution's record is kept in its tree.
func NodeKey(workflow, runID, node string, attempt int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", workflow, runID, node, attempt)))
	return namespace.Key(namespace.Of(workflow), "wf-"+hex.EncodeToString(sum[:16]))
}

// Node returns the node with id, or nil.
func (r *Run) Node(id string) *NodeRun {
	for i := range r.Nodes {
		if r.Nodes[i].ID == id {
			return &r.Nodes[i]
		}
	}
	return nil
}

// Active reports whether the run is QUEUED or RUNNING.
func (r Run) Active() bool { return !r.State.Final() }

// RequestCancel asks the leader to cancel an active run.
func RequestCancel(r Run, reason string, now time.Time) (Run, error) {
	if r.State.Final() {
		return r, fmt.Errorf("%w: run '%s' of workflow '%s' already ended %s", ErrRunFinished, r.ID, r.Workflow, r.State)
	}
	if r.Cancel == nil {
		r.Cancel = &Cancel{At: now.UTC(), Reason: reason}
	}
	return r, nil
}

// Retry makes a run that failed or was cancelled run again from its nodes
// that did not succeed (they run again as a new attempt; succeeded nodes
// and their outputs are kept). The run waits as QUEUED for a slot.
func Retry(r Run) (Run, error) {
	if r.State != RunFailed && r.State != RunCancelled {
		return r, fmt.Errorf("%w: run '%s' of workflow '%s' is %s; only a run that failed or was cancelled can be retried",
			ErrNotRetryable, r.ID, r.Workflow, r.State)
	}
	nodes := make([]NodeRun, len(r.Nodes))
	for i, n := range r.Nodes {
		if n.State != NodeSucceeded {
			n = NodeRun{ID: n.ID, Job: n.Job, DependsOn: n.DependsOn, Trigger: n.Trigger, JobParameter: n.JobParameter,
				State: NodePending, Attempt: n.Attempt + 1}
		}
		nodes[i] = n
	}
	r.Nodes = nodes
	r.State, r.Attempt, r.StartedAt, r.EndedAt, r.Reason, r.Cancel = RunQueued, r.Attempt+1, time.Time{}, time.Time{}, "", nil
	return r, nil
}

// Counts counts a run's nodes by state.
func (r Run) Counts() map[NodeState]int {
	out := map[NodeState]int{}
	for _, n := range r.Nodes {
		out[n.State]++
	}
	return out
}

// failedNodes names the nodes that failed or were cancelled.
func (r Run) failedNodes() string {
	var names []string
	for _, n := range r.Nodes {
		if n.State == NodeFailed || n.State == NodeCancelled {
			names = append(names, "'"+n.ID+"'")
		}
	}
	return strings.Join(names, ", ")
}

// Handoff is a node's hand-off time: from the end of the last shard of
// the nodes it depends on to the start of its own first shard (false for a
// root node, or when a time is unknown). Shard times are the executors'
// (the processes' end and start).
func Handoff(r Run, n NodeRun) (time.Duration, bool) {
	if len(n.DependsOn) == 0 || n.StartedAt.IsZero() {
		return 0, false
	}
	var last time.Time
	for _, d := range n.DependsOn {
		up := r.Node(d)
		if up == nil || up.EndedAt.IsZero() {
			return 0, false
		}
		if up.EndedAt.After(last) {
			last = up.EndedAt
		}
	}
	return max(n.StartedAt.Sub(last), 0), true
}

// Ended lists the nodes that reached a final state between prev and next
// (the same run, before and after one decision).
func Ended(prev, next Run) []NodeRun {
	var out []NodeRun
	for i, n := range next.Nodes {
		if n.State.Final() && (i >= len(prev.Nodes) || !prev.Nodes[i].State.Final() || prev.Nodes[i].Attempt != n.Attempt) {
			out = append(out, n)
		}
	}
	return out
}
