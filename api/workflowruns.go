package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
	"github.com/gin-gonic/gin"
)

// Node states the API shows besides the stored ones: a RUNNING node whose
// execution still waits in its job's ready queue is QUEUED.
const nodeQueued workflow.NodeState = "QUEUED"

// wfRunView is a workflow run with every node's state, times, task ids, outputs and
// skip reason.
type wfRunView struct {
	workflow.Run
	Cancelling bool                       `json:"cancelling"`
	NodeStates map[workflow.NodeState]int `json:"nodeStates"`
	Nodes      []nodeView                 `json:"nodes"`
	// FromHistory: the registry no longer keeps the run (workflow_runs_kept);
	// this is its record in the history database.
	FromHistory bool `json:"fromHistory,omitempty"`
}

// nodeView is a node of a run as the API shows it.
type nodeView struct {
	workflow.NodeRun
	State workflow.NodeState `json:"state"`
	// TaskIDs are the node's tasks: those running now and the last task
	// of every shard that ended (read their logs at /api/job/logs/{taskId}).
	TaskIDs []string   `json:"taskIds"`
	Running []nodeTask `json:"running,omitempty"`
}

// nodeTask is a running task of a node.
type nodeTask struct {
	ShardingItem int        `json:"shardingItem"`
	TaskID       string     `json:"taskId"`
	Hostname     string     `json:"hostname"`
	State        task.State `json:"state"`
	LaunchedAt   time.Time  `json:"launchedAt"`
}

func (s *workflowHandlers) getWorkflowRun(c *gin.Context) {
	name, id := c.Param("workflowName"), c.Param("runId")
	run, err := s.regIn(c).Flows().WorkflowRun(c, name, id)
	if errors.Is(err, workflow.ErrRunNotFound) {
		v, ok, herr := s.historicRun(c, name, id)
		if herr != nil {
			writeError(c, s.log, herr)
			return
		}
		if ok {
			c.JSON(http.StatusOK, v)
			return
		}
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.answerRun(c, run)
}

func (s *workflowHandlers) answerRun(c *gin.Context, run workflow.Run) {
	v, err := s.viewRun(c, run)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *workflowHandlers) viewRun(ctx context.Context, run workflow.Run) (wfRunView, error) {
	v := wfRunView{Run: run, Cancelling: run.Cancel != nil && run.Active(), NodeStates: map[workflow.NodeState]int{}, Nodes: []nodeView{}}
	var pending map[string]bool
	for _, n := range run.Nodes {
		nv := nodeView{NodeRun: n, State: n.State, TaskIDs: []string{}}
		if n.State == workflow.NodeRunning {
			if pending == nil {
				var err error
				if pending, err = s.regIn(ctx).Work().PendingKeys(ctx); err != nil {
					return v, err
				}
			}
			if pending[n.RunKey] {
				nv.State = nodeQueued
			}
			if err := s.nodeTasks(ctx, &nv); err != nil {
				return v, err
			}
		}
		for _, sh := range nv.Shards {
			if sh.TaskID != "" && !slices.Contains(nv.TaskIDs, sh.TaskID) {
				nv.TaskIDs = append(nv.TaskIDs, sh.TaskID)
			}
		}
		v.NodeStates[nv.State]++
		v.Nodes = append(v.Nodes, nv)
	}
	return v, nil
}

// nodeTasks adds a running node's running tasks and the shards that ended
// so far (from its execution's record).
func (s *workflowHandlers) nodeTasks(ctx context.Context, nv *nodeView) error {
	running, err := s.regIn(ctx).Work().RunningOf(ctx, nv.Job)
	if err != nil {
		return err
	}
	for item, rt := range running {
		if rt.RunKey == nv.RunKey {
			nv.Running = append(nv.Running, nodeTask{item, rt.TaskID, rt.Hostname, rt.State, rt.LaunchedAt})
		}
	}
	slices.SortFunc(nv.Running, func(a, b nodeTask) int { return a.ShardingItem - b.ShardingItem })
	for _, t := range nv.Running {
		nv.TaskIDs = append(nv.TaskIDs, t.TaskID)
	}
	rec, err := s.regIn(ctx).Work().RunRecordOf(ctx, nv.RunKey)
	if errors.Is(err, registry.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, sh := range rec.Shards {
		nv.Shards = append(nv.Shards, workflow.Shard{Item: sh.Item, TaskID: sh.TaskID, State: sh.State, Message: sh.Message,
			StartedAt: sh.StartedAt, EndedAt: sh.EndedAt, Outputs: sh.Outputs})
	}
	return nil
}

// cancelWorkflowRun asks the leader to cancel a run: its running tasks
// are killed, its pending nodes skipped. The answer is the run as it is
// then (state RUNNING with "cancelling" until the kills are done).
func (s *workflowHandlers) cancelWorkflowRun(c *gin.Context) {
	who := c.GetString(ctxUser)
	if who == "" {
		who = "anonymous"
	}
	now := s.clock.Now()
	run, err := s.regIn(c).Flows().UpdateWorkflowRun(c, c.Param("workflowName"), c.Param("runId"), func(r workflow.Run) (workflow.Run, error) {
		return workflow.RequestCancel(r, "cancelled by "+who+" at "+now.UTC().Format(time.RFC3339), now)
	})
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.answerRun(c, run)
}

// retryWorkflowRun runs a failed or cancelled run again from its nodes
// that did not succeed; the run waits as QUEUED for a slot.
func (s *workflowHandlers) retryWorkflowRun(c *gin.Context) {
	name := c.Param("workflowName")
	if _, err := s.regIn(c).Flows().Workflow(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	run, err := s.regIn(c).Flows().UpdateWorkflowRun(c, name, c.Param("runId"), workflow.Retry)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.answerRun(c, run)
}

// runSummary is a run without its nodes (lists).
type runSummary struct {
	Workflow   string                     `json:"workflow"`
	RunID      string                     `json:"runId"`
	State      workflow.RunState          `json:"state"`
	Source     string                     `json:"source"`
	Parameter  *string                    `json:"parameter,omitempty"`
	Attempt    int                        `json:"attempt"`
	CreatedAt  time.Time                  `json:"createdAt"`
	StartedAt  *time.Time                 `json:"startedAt,omitempty"`
	EndedAt    *time.Time                 `json:"endedAt,omitempty"`
	Reason     string                     `json:"reason,omitempty"`
	Cancelling bool                       `json:"cancelling"`
	NodeStates map[workflow.NodeState]int `json:"nodeStates"`
}

func summarize(r workflow.Run) runSummary {
	return runSummary{Workflow: r.Workflow, RunID: r.ID, State: r.State, Source: r.Source, Parameter: r.Parameter, Attempt: r.Attempt,
		CreatedAt: r.CreatedAt, StartedAt: timePtr(r.StartedAt), EndedAt: timePtr(r.EndedAt), Reason: r.Reason,
		Cancelling: r.Cancel != nil && r.Active(), NodeStates: r.Counts()}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

var runStates = []workflow.RunState{workflow.RunQueued, workflow.RunRunning, workflow.RunSucceeded, workflow.RunFailed, workflow.RunCancelled}

// listWorkflowRuns answers the runs the registry keeps (active ones and
// the latest finished; workflow_runs_kept), newest first, filtered by
// ?state= (one state, or several separated by commas).
func (s *workflowHandlers) listWorkflowRuns(c *gin.Context) {
	name := c.Param("workflowName")
	page, perPage, err := pageOf(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	want := map[workflow.RunState]bool{}
	for st := range strings.SplitSeq(c.Query("state"), ",") {
		if st = strings.ToUpper(strings.TrimSpace(st)); st == "" {
			continue
		}
		if !slices.Contains(runStates, workflow.RunState(st)) {
			writeError(c, s.log, fmt.Errorf("%w: state %q is not a run state (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)", ErrBadRequest, st))
			return
		}
		want[workflow.RunState(st)] = true
	}
	if _, err := s.regIn(c).Flows().Workflow(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	runs, err := s.regIn(c).Flows().WorkflowRuns(c, name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	rows := make([]runSummary, 0, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		if len(want) == 0 || want[runs[i].State] {
			rows = append(rows, summarize(runs[i]))
		}
	}
	c.JSON(http.StatusOK, paged(rows, page, perPage))
}
