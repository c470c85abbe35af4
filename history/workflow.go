package history

import (
	"context"

	"github.com/ejcloud/elasticjob/history/view"
)

// The workflow history tables (migration 00004), searched like the others.
var (
	workflowRunTable = newTable("WORKFLOW_RUN_LOG", "created_time", []column{
		{"id", "id", text, false, true},
		{"workflow_name", "workflowName", text, true, true},
		{"run_id", "runId", text, true, true},
		{"state", "state", text, true, true},
		{"source", "source", text, true, true},
		{"attempt", "attempt", integer, true, true},
		{"created_time", "createdTime", text, false, true},
		{"start_time", "startTime", text, false, true},
		{"end_time", "endTime", text, false, true},
		{"reason", "reason", text, false, false},
		{"node_count", "nodeCount", integer, false, true},
		{"succeeded_count", "succeededCount", integer, false, true},
		{"failed_count", "failedCount", integer, false, true},
		{"skipped_count", "skippedCount", integer, false, true},
	})
	workflowNodeTable = newTable("WORKFLOW_NODE_LOG", "end_time", []column{
		{"id", "id", text, false, true},
		{"workflow_name", "workflowName", text, true, true},
		{"run_id", "runId", text, true, true},
		{"node_id", "nodeId", text, true, true},
		{"job_name", "jobName", text, true, true},
		{"depends_on", "dependsOn", text, false, false},
		{"trigger_rule", "triggerRule", text, true, true},
		{"attempt", "attempt", integer, true, true},
		{"state", "state", text, true, true},
		{"run_key", "runKey", text, true, false},
		{"task_ids", "taskIds", text, false, false},
		{"queued_time", "queuedTime", text, false, true},
		{"start_time", "startTime", text, false, true},
		{"end_time", "endTime", text, false, true},
		{"skip_reason", "skipReason", text, false, false},
		{"message", "message", text, false, false},
		{"outputs", "outputs", text, false, false},
	})
)

// WorkflowRuns searches WORKFLOW_RUN_LOG (newest first unless sorted
// otherwise).
func (s *Store) WorkflowRuns(ctx context.Context, q view.Query) (view.Page[view.WorkflowRun], error) {
	return searchPage(ctx, s, workflowRunTable, q, func(r rowScanner) (view.WorkflowRun, error) {
		var e view.WorkflowRun
		var created, start, end dbTime
		err := r.Scan(&e.ID, &e.Workflow, &e.RunID, &e.State, &e.Source, &e.Attempt, &created, &start, &end, &e.Reason,
			&e.NodeCount, &e.SucceededCount, &e.FailedCount, &e.SkippedCount)
		e.CreatedTime, e.StartTime, e.EndTime = created.ptr(), start.ptr(), end.ptr()
		return e, err
	})
}

// WorkflowNodes searches WORKFLOW_NODE_LOG (newest end first unless
// sorted otherwise).
func (s *Store) WorkflowNodes(ctx context.Context, q view.Query) (view.Page[view.WorkflowNode], error) {
	return searchPage(ctx, s, workflowNodeTable, q, func(r rowScanner) (view.WorkflowNode, error) {
		var e view.WorkflowNode
		var queued, start, end dbTime
		err := r.Scan(&e.ID, &e.Workflow, &e.RunID, &e.NodeID, &e.JobName, &e.DependsOn, &e.TriggerRule, &e.Attempt, &e.State,
			&e.RunKey, &e.TaskIDs, &queued, &start, &end, &e.SkipReason, &e.Message, &e.Outputs)
		e.QueuedTime, e.StartTime, e.EndTime = queued.ptr(), start.ptr(), end.ptr()
		return e, err
	})
}
