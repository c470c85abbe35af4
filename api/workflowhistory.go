package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/workflow"
	"github.com/gin-gonic/gin"
)

// WorkflowHistory is what the workflow history endpoints ask of the
// history database (history.Store); the History in Options
// provides it when it implements it.
type WorkflowHistory interface {
	WorkflowRuns(ctx context.Context, q view.Query) (view.Page[view.WorkflowRun], error)
	WorkflowNodes(ctx context.Context, q view.Query) (view.Page[view.WorkflowNode], error)
}

func (s *workflowHandlers) workflowHistory() WorkflowHistory {
	h, _ := s.hist.(WorkflowHistory) // nsHistory: the request's namespace's
	return h
}

// workflowRunEvents searches WORKFLOW_RUN_LOG with the history searches'
// paging, sorting, time range (createdTime) and filters.
func (s *workflowHandlers) workflowRunEvents(c *gin.Context) {
	searchWith(s, c, func(h WorkflowHistory, q view.Query) (any, error) { return h.WorkflowRuns(c, q) },
		view.Page[view.WorkflowRun]{Rows: []view.WorkflowRun{}})
}

// workflowNodeEvents searches WORKFLOW_NODE_LOG (time range: endTime).
func (s *workflowHandlers) workflowNodeEvents(c *gin.Context) {
	searchWith(s, c, func(h WorkflowHistory, q view.Query) (any, error) { return h.WorkflowNodes(c, q) },
		view.Page[view.WorkflowNode]{Rows: []view.WorkflowNode{}})
}

// searchWith answers a history search, or empty when history is off.
func searchWith(s *workflowHandlers, c *gin.Context, search func(WorkflowHistory, view.Query) (any, error), empty any) {
	q, err := searchQuery(c.Request.URL.Query())
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	h := s.workflowHistory()
	if h == nil {
		c.JSON(http.StatusOK, empty)
		return
	}
	page, err := search(h, q)
	if err != nil {
		writeError(c, s.log, queryError(err))
		return
	}
	c.JSON(http.StatusOK, page)
}

// historicRun rebuilds a run the registry no longer keeps from its rows in
// the history database (each node's latest attempt; shards' own outcomes
// are not kept there, their task ids are).
func (s *workflowHandlers) historicRun(ctx context.Context, name, runID string) (wfRunView, bool, error) {
	h := s.workflowHistory()
	if h == nil {
		return wfRunView{}, false, nil
	}
	filters := map[string]string{"workflowName": name, "runId": runID}
	runs, err := h.WorkflowRuns(ctx, view.Query{PerPage: 1, Filters: filters})
	if err != nil || len(runs.Rows) == 0 {
		if errors.Is(err, view.ErrBadQuery) {
			err = nil
		}
		return wfRunView{}, false, err
	}
	nodes, err := h.WorkflowNodes(ctx, view.Query{PerPage: view.MaxPerPage, Sort: "attempt", Order: "asc", Filters: filters})
	if err != nil {
		return wfRunView{}, false, err
	}
	row := runs.Rows[0]
	run := workflow.Run{Workflow: name, ID: runID, State: workflow.RunState(row.State), Source: row.Source, Attempt: row.Attempt,
		CreatedAt: timeOf(row.CreatedTime), StartedAt: timeOf(row.StartTime), EndedAt: timeOf(row.EndTime), Reason: row.Reason}
	latest := map[string]view.WorkflowNode{}
	for _, n := range nodes.Rows {
		latest[n.NodeID] = n // ascending attempts: the last one wins
	}
	v := wfRunView{Run: run, NodeStates: map[workflow.NodeState]int{}, Nodes: []nodeView{}, FromHistory: true}
	for _, n := range latest {
		nr := workflow.NodeRun{ID: n.NodeID, Job: n.JobName, Trigger: workflow.Rule(n.TriggerRule), State: workflow.NodeState(n.State),
			Attempt: n.Attempt, RunKey: n.RunKey, QueuedAt: timeOf(n.QueuedTime), StartedAt: timeOf(n.StartTime), EndedAt: timeOf(n.EndTime),
			SkipReason: n.SkipReason, Message: n.Message}
		if n.DependsOn != "" {
			nr.DependsOn = strings.Split(n.DependsOn, ",")
		}
		_ = json.Unmarshal([]byte(n.Outputs), &nr.Outputs)
		if len(nr.Outputs) == 0 {
			nr.Outputs = nil
		}
		nv := nodeView{NodeRun: nr, State: nr.State, TaskIDs: []string{}}
		if n.TaskIDs != "" {
			nv.TaskIDs = strings.Split(n.TaskIDs, ",")
		}
		v.NodeStates[nv.State]++
		v.Nodes = append(v.Nodes, nv)
	}
	sort.Slice(v.Nodes, func(i, j int) bool { return v.Nodes[i].ID < v.Nodes[j].ID })
	return v, true, nil
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
