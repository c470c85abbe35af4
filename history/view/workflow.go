package view

import "time"

// WorkflowRun is a row of WORKFLOW_RUN_LOG: a workflow run as it was last
// recorded (failedCount counts failed and cancelled nodes).
type WorkflowRun struct {
	ID             string     `json:"id"`
	Workflow       string     `json:"workflowName"`
	RunID          string     `json:"runId"`
	State          string     `json:"state"`
	Source         string     `json:"source"`
	Attempt        int        `json:"attempt"`
	CreatedTime    *time.Time `json:"createdTime"`
	StartTime      *time.Time `json:"startTime"`
	EndTime        *time.Time `json:"endTime"`
	Reason         string     `json:"reason"`
	NodeCount      int        `json:"nodeCount"`
	SucceededCount int        `json:"succeededCount"`
	FailedCount    int        `json:"failedCount"`
	SkippedCount   int        `json:"skippedCount"`
}

// WorkflowNode is a row of WORKFLOW_NODE_LOG: one node execution (a node
// in one attempt of its run) that ended. DependsOn and TaskIDs are comma
// separated; Outputs is a JSON object.
type WorkflowNode struct {
	ID          string     `json:"id"`
	Workflow    string     `json:"workflowName"`
	RunID       string     `json:"runId"`
	NodeID      string     `json:"nodeId"`
	JobName     string     `json:"jobName"`
	DependsOn   string     `json:"dependsOn"`
	TriggerRule string     `json:"triggerRule"`
	Attempt     int        `json:"attempt"`
	State       string     `json:"state"`
	RunKey      string     `json:"runKey"`
	TaskIDs     string     `json:"taskIds"`
	QueuedTime  *time.Time `json:"queuedTime"`
	StartTime   *time.Time `json:"startTime"`
	EndTime     *time.Time `json:"endTime"`
	SkipReason  string     `json:"skipReason"`
	Message     string     `json:"message"`
	Outputs     string     `json:"outputs"`
}
