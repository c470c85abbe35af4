package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/gin-gonic/gin"
)

// taskView is GET /api/job/tasks/{taskId}: how one task stands or ended,
// from the running registry and the history (what the console's log page
// shows above a task's output).
type taskView struct {
	TaskID       string     `json:"taskId"`
	JobName      string     `json:"jobName"`
	ShardingItem int        `json:"shardingItem"`
	State        task.State `json:"state"` // the latest state known: TASK_RUNNING, TASK_FAILED, …
	Running      bool       `json:"running"`
	Hostname     string     `json:"hostname,omitempty"`
	AgentID      string     `json:"agentId"`
	Source       string     `json:"source,omitempty"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      *bool      `json:"success"`  // null while it runs or when history has no end
	ExitCode     *int       `json:"exitCode"` // from the failure cause ("exit code 3: …"); 0 when it finished with success
	Signal       string     `json:"signal,omitempty"`
	FailureCause string     `json:"failureCause,omitempty"`
	Message      string     `json:"message,omitempty"` // the latest status update's message
}

var (
	exitCodeRE = regexp.MustCompile(`\bexit code (-?\d+)`)
	signalRE   = regexp.MustCompile(`\bterminated by signal (\w+)`)
)

func (s *runHandlers) taskResult(c *gin.Context) {
	id := c.Param("taskId")
	tid, err := jobs.ParseTaskID(id)
	if err == nil {
		err = localTask(c, id)
	}
	if errors.Is(err, ErrNotFound) {
		writeError(c, s.log, err)
		return
	}
	if err != nil {
		writeError(c, s.log, fmt.Errorf("%w: no such endpoint or task: GET %s (a task id looks like jobName@-@item@-@READY|FAILOVER@-@agentId@-@uuid)", ErrNotFound, c.Request.URL.Path))
		return
	}
	v := taskView{TaskID: id, JobName: namespace.Name(tid.JobName), ShardingItem: tid.Item, AgentID: tid.AgentID}
	known, err := s.runningTask(c, &v)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	found, err := s.taskHistory(c, &v)
	if err != nil {
		writeError(c, s.log, queryError(err))
		return
	}
	if !known && !found {
		writeError(c, s.log, fmt.Errorf("%w: task '%s' is not running and history has no record of it", ErrNotFound, id))
		return
	}
	cause := v.FailureCause
	if cause == "" {
		cause = v.Message
	}
	if m := exitCodeRE.FindStringSubmatch(cause); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			v.ExitCode = &n
		}
	}
	if m := signalRE.FindStringSubmatch(cause); m != nil {
		v.Signal = m[1]
	}
	if v.ExitCode == nil && v.Success != nil && *v.Success {
		zero := 0 // a success exited 0 (null read as "unknown")
		v.ExitCode = &zero
	}
	c.JSON(http.StatusOK, v)
}

// runningTask fills v from the running registry when the task runs.
func (s *runHandlers) runningTask(c *gin.Context, v *taskView) (bool, error) {
	running, err := s.regIn(c).Work().RunningOf(c, v.JobName)
	if err != nil {
		return false, err
	}
	rt, ok := running[v.ShardingItem]
	if !ok || rt.TaskID != v.TaskID {
		return false, nil
	}
	v.Running, v.State, v.Hostname, v.Source = true, rt.State, rt.Hostname, rt.Source
	if v.AgentID == "" { // a fire's task id names no agent (jobs.FireTaskID)
		v.AgentID = rt.AgentID
	}
	launched := rt.LaunchedAt
	v.StartTime = &launched
	return true, nil
}

// taskHistory fills v from the task's execution row and its latest status
// trace.
func (s *runHandlers) taskHistory(c *gin.Context, v *taskView) (bool, error) {
	if s.hist == nil {
		return false, nil
	}
	filter := map[string]string{"taskId": v.TaskID}
	ex, err := s.hist.Executions(c, view.Query{Page: 1, PerPage: 1, Filters: filter})
	if err != nil {
		return false, err
	}
	tr, err := s.hist.StatusTraces(c, view.Query{Page: 1, PerPage: 1, Sort: "creationTime", Order: "desc", Filters: filter})
	if err != nil {
		return false, err
	}
	if len(ex.Rows) > 0 {
		e := ex.Rows[0]
		if v.Hostname == "" {
			v.Hostname = e.Hostname
		}
		if e.StartTime != nil {
			v.StartTime = e.StartTime
		}
		v.Source, v.CompleteTime = e.Source, e.CompleteTime
		if e.CompleteTime != nil {
			ok := e.Success
			v.Success = &ok
		}
		if e.FailureCause != nil {
			v.FailureCause = *e.FailureCause
		}
	}
	if len(tr.Rows) > 0 {
		t := tr.Rows[0]
		if !v.Running {
			v.State = t.State
		}
		if v.AgentID == "" {
			v.AgentID = t.SlaveID
		}
		if t.Message != nil {
			v.Message = *t.Message
		}
	}
	return len(ex.Rows) > 0 || len(tr.Rows) > 0, nil
}

// lastResult is a job's row of GET /api/job/lastResults: the newest
// execution of each of its shards in history, summed up.
type lastResult struct {
	JobName       string     `json:"jobName"`
	State         string     `json:"state"` // RUNNING (a shard runs), FAILED (a shard's newest failed), SUCCEEDED
	Shards        int        `json:"shards"`
	FailedShards  int        `json:"failedShards"`
	RunningShards int        `json:"runningShards"`
	StartTime     *time.Time `json:"startTime"`    // the latest start among them
	CompleteTime  *time.Time `json:"completeTime"` // the latest end among them
	FailureCause  string     `json:"failureCause,omitempty"`
	TaskID        string     `json:"taskId"` // a failed shard's task, else the newest
}

// Bounds of GET /api/job/lastResults.
const (
	maxResultJobs = 100
	maxResultRows = 500 // history rows read per job
)

// lastResults answers the last result of each job named (repeated
// jobName, or comma-separated), for the console's jobs list; jobs without
// history (or unknown) are left out.
func (s *runHandlers) lastResults(c *gin.Context) {
	var names []string
	for _, v := range c.QueryArray("jobName") {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 || len(names) > maxResultJobs {
		writeError(c, s.log, fmt.Errorf("%w: name 1 to %d jobs with jobName=a&jobName=b (or jobName=a,b), got %d", ErrBadRequest, maxResultJobs, len(names)))
		return
	}
	out := []lastResult{}
	if s.hist == nil {
		c.JSON(http.StatusOK, out)
		return
	}
	for _, name := range names {
		cfg, err := s.regIn(c).Config().Job(c, name)
		if errors.Is(err, registry.ErrJobNotFound) {
			continue
		} else if err != nil {
			writeError(c, s.log, err)
			return
		}
		registered, err := s.regOf(c).Config().JobRegisteredAt(c, name)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		page, err := s.hist.Executions(c, view.Query{Page: 1, PerPage: min(2*cfg.ShardingTotalCount, maxResultRows),
			Sort: "startTime", Order: "desc", Start: historyFrom(registered), Filters: map[string]string{"jobName": name}})
		if err != nil {
			writeError(c, s.log, queryError(err))
			return
		}
		if r, ok := summarizeShards(name, cfg.ShardingTotalCount, page.Rows); ok {
			out = append(out, r)
		}
	}
	c.JSON(http.StatusOK, out)
}

// summarizeShards sums up the newest row of each shard (rows newest first).
func summarizeShards(job string, total int, rows []view.Execution) (lastResult, bool) {
	r := lastResult{JobName: job, State: "SUCCEEDED"}
	seen := map[int]bool{}
	for _, e := range rows {
		if e.ShardingItem >= total || seen[e.ShardingItem] {
			continue
		}
		seen[e.ShardingItem] = true
		r.Shards++
		if r.TaskID == "" {
			r.TaskID = e.TaskID
		}
		r.StartTime = later(r.StartTime, e.StartTime)
		r.CompleteTime = later(r.CompleteTime, e.CompleteTime)
		switch {
		case e.CompleteTime == nil && !e.Success:
			r.RunningShards++
		case !e.Success:
			if r.FailedShards == 0 {
				r.TaskID = e.TaskID
				if e.FailureCause != nil {
					r.FailureCause = *e.FailureCause
				}
			}
			r.FailedShards++
		}
	}
	switch {
	case r.RunningShards > 0:
		r.State = "RUNNING"
	case r.FailedShards > 0:
		r.State = "FAILED"
	}
	return r, r.Shards > 0
}

func later(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.After(*a)) {
		return b
	}
	return a
}
