package trace

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ejcloud/elasticjob/migrations"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/workflow"
)

// WorkflowRun is a row of WORKFLOW_RUN_LOG: a run as it is now. Rows are
// upserted by ID; Version (the run's registry version) keeps a late write
// of an older state from overwriting a newer one.
type WorkflowRun struct {
	ID        string    `json:"id"`
	Workflow  string    `json:"workflow"`
	RunID     string    `json:"runId"`
	State     string    `json:"state"`
	Source    string    `json:"source"`
	Attempt   int       `json:"attempt"`
	Created   time.Time `json:"createdTime"`
	Started   time.Time `json:"startTime,omitzero"`
	Ended     time.Time `json:"endTime,omitzero"`
	Reason    string    `json:"reason"`
	Nodes     int       `json:"nodeCount"`
	Succeeded int       `json:"succeededCount"`
	Failed    int       `json:"failedCount"` // failed or cancelled
	Skipped   int       `json:"skippedCount"`
	Version   int64     `json:"version"`
}

// WorkflowNode is a row of WORKFLOW_NODE_LOG: one node execution (a node
// in one attempt of its run) that ended. Written once (insert or ignore).
type WorkflowNode struct {
	ID         string    `json:"id"`
	Workflow   string    `json:"workflow"`
	RunID      string    `json:"runId"`
	Node       string    `json:"node"`
	Job        string    `json:"job"`
	DependsOn  string    `json:"dependsOn"` // comma separated
	Trigger    string    `json:"trigger"`
	Attempt    int       `json:"attempt"`
	State      string    `json:"state"`
	RunKey     string    `json:"runKey"`
	TaskIDs    string    `json:"taskIds"` // comma separated
	Queued     time.Time `json:"queuedTime,omitzero"`
	Started    time.Time `json:"startTime,omitzero"`
	Ended      time.Time `json:"endTime,omitzero"`
	SkipReason string    `json:"skipReason"`
	Message    string    `json:"message"`
	Outputs    string    `json:"outputs"` // JSON object
}

func (e WorkflowRun) EventID() string  { return e.ID }
func (e WorkflowNode) EventID() string { return e.ID }

// Column widths of the workflow tables (migrations/…/00004_workflows.sql).
const (
	maxRunID      = 100
	maxNodeID     = 64
	maxRunKey     = 64
	maxSkipReason = 1000
	maxText       = 60000 // TEXT columns (MySQL: 65,535 bytes; clipped by characters, so kept below)
)

func (e WorkflowRun) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.Workflow, e.RunID, e.State, e.Source = clipKey(e.Workflow), clip(e.RunID, maxRunID), clip(e.State, maxShort), clip(e.Source, maxShort)
	e.Reason = clip(e.Reason, maxMessage)
	e.Created = stamp(e.Created, now)
	e.Started, e.Ended = stampOrZero(e.Started), stampOrZero(e.Ended)
	return e
}

func (e WorkflowNode) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.Workflow, e.RunID, e.Node, e.Job = clipKey(e.Workflow), clip(e.RunID, maxRunID), clip(e.Node, maxNodeID), clipKey(e.Job)
	e.DependsOn, e.Trigger = clip(e.DependsOn, maxText/4), clip(e.Trigger, maxShort)
	e.State, e.RunKey, e.TaskIDs = clip(e.State, maxShort), clip(e.RunKey, maxRunKey), clip(e.TaskIDs, maxText/4)
	e.SkipReason, e.Message, e.Outputs = clip(e.SkipReason, maxSkipReason), clip(e.Message, maxMessage), clipJSON(e.Outputs)
	e.Queued, e.Started = stampOrZero(e.Queued), stampOrZero(e.Started)
	e.Ended = stamp(e.Ended, now)
	return e
}

func stampOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// clipJSON keeps outputs that fit the column; larger ones are replaced by
// a note (the run in the registry keeps them whole while it is kept).
func clipJSON(s string) string {
	if len(s) <= maxText/4 {
		return s
	}
	return `{"_truncated":"outputs of ` + jsonInt(len(s)) + ` bytes are not kept in history"}`
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// writeWorkflows stores workflow rows in the batch's transaction.
func (s *sqlWriter) writeWorkflows(ctx context.Context, tx *sqlx.Tx, runs []WorkflowRun, nodes []WorkflowNode) error {
	d := s.dialect
	err := insertRows(ctx, tx, "INSERT INTO "+migrations.TableWorkflowRunLog+
		" (id, namespace, workflow_name, run_id, state, source, attempt, created_time, start_time, end_time, reason, node_count, succeeded_count,"+
		" failed_count, skipped_count, version) VALUES ", 16, s.runUpsert(), len(runs), func(i int) []any {
		e := runs[i]
		ns, wf := split(e.Workflow)
		return []any{e.ID, ns, wf, e.RunID, e.State, e.Source, e.Attempt, timeArg(d, e.Created), timeArg(d, e.Started),
			timeArg(d, e.Ended), e.Reason, e.Nodes, e.Succeeded, e.Failed, e.Skipped, e.Version}
	})
	if err != nil {
		return err
	}
	return insertRows(ctx, tx, s.insertIgnore()+migrations.TableWorkflowNodeLog+
		" (id, namespace, workflow_name, run_id, node_id, job_name, depends_on, trigger_rule, attempt, state, run_key, task_ids, queued_time,"+
		" start_time, end_time, skip_reason, message, outputs) VALUES ", 18, "", len(nodes), func(i int) []any {
		e := nodes[i]
		ns, wf := split(e.Workflow)
		return []any{e.ID, ns, wf, e.RunID, e.Node, namespace.Name(e.Job), e.DependsOn, e.Trigger, e.Attempt, e.State, namespace.Name(e.RunKey), e.TaskIDs, timeArg(d, e.Queued),
			timeArg(d, e.Started), timeArg(d, e.Ended), e.SkipReason, e.Message, e.Outputs}
	})
}

// runColumns are the columns a newer version of a run row replaces.
var runColumns = []string{"state", "attempt", "start_time", "end_time", "reason", "node_count", "succeeded_count", "failed_count", "skipped_count"}

func (s *sqlWriter) runUpsert() string {
	var b strings.Builder
	if s.dialect == dialectMySQL {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
		for _, c := range runColumns {
			b.WriteString(c + " = IF(VALUES(version) >= version, VALUES(" + c + "), " + c + "), ")
		}
		b.WriteString("version = GREATEST(version, VALUES(version))") // last: the IFs above read the old version
		return b.String()
	}
	b.WriteString(" ON CONFLICT(id) DO UPDATE SET ")
	for _, c := range runColumns {
		b.WriteString(c + " = excluded." + c + ", ")
	}
	b.WriteString("version = excluded.version WHERE excluded.version >= " + migrations.TableWorkflowRunLog + ".version")
	return b.String()
}

// WorkflowObserver records workflow runs and node executions (it is a
// flowengine Observer): a run row at every change, a node row for
// every node that ended.
type WorkflowObserver struct{ rec Recorder }

// NewWorkflowObserver records into r.
func NewWorkflowObserver(r Recorder) *WorkflowObserver { return &WorkflowObserver{rec: r} }

// RunChanged records the run and the nodes that ended.
func (o *WorkflowObserver) RunChanged(prev, next workflow.Run) {
	if o == nil || o.rec == nil {
		return
	}
	c := next.Counts()
	o.rec.Record(WorkflowRun{ID: NewID("workflow-run", next.Workflow, next.ID), Workflow: next.Workflow, RunID: next.ID,
		State: string(next.State), Source: next.Source, Attempt: next.Attempt, Created: next.CreatedAt, Started: next.StartedAt,
		Ended: next.EndedAt, Reason: next.Reason, Nodes: len(next.Nodes), Succeeded: c[workflow.NodeSucceeded],
		Failed: c[workflow.NodeFailed] + c[workflow.NodeCancelled], Skipped: c[workflow.NodeSkipped], Version: next.Version})
	for _, n := range workflow.Ended(prev, next) {
		o.rec.Record(nodeRow(next, n))
	}
}

func nodeRow(r workflow.Run, n workflow.NodeRun) WorkflowNode {
	ids := make([]string, 0, len(n.Shards))
	for _, sh := range n.Shards {
		ids = append(ids, sh.TaskID)
	}
	outputs := "{}"
	if len(n.Outputs) > 0 {
		b, _ := json.Marshal(n.Outputs)
		outputs = string(b)
	}
	return WorkflowNode{ID: NewID("workflow-node", r.Workflow, r.ID, n.ID, jsonInt(n.Attempt)), Workflow: r.Workflow, RunID: r.ID,
		Node: n.ID, Job: n.Job, DependsOn: strings.Join(n.DependsOn, ","), Trigger: string(n.Trigger), Attempt: n.Attempt, State: string(n.State), RunKey: n.RunKey, TaskIDs: strings.Join(ids, ","),
		Queued: n.QueuedAt, Started: n.StartedAt, Ended: n.EndedAt, SkipReason: n.SkipReason, Message: n.Message, Outputs: outputs}
}
