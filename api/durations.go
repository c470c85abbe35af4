package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/gin-gonic/gin"
)

// durationRun is one shard's run in a job's duration trend.
type durationRun struct {
	TaskID       string    `json:"taskId"`
	ShardingItem int       `json:"shardingItem"`
	StartTime    time.Time `json:"startTime"`
	DurationMs   int64     `json:"durationMs"`
	Success      bool      `json:"success"`
}

// durationsView answers GET /api/jobs/{jobName}/durations: the job's
// recent finished runs (newest first) and what its successful ones took
// (the p90 the launch round names holders' expected ends by).
type durationsView struct {
	JobName string           `json:"jobName"`
	Typical estimate.Typical `json:"typical"`
	Runs    []durationRun    `json:"runs"`
}

// Bounds of GET /api/jobs/{jobName}/durations?limit=N.
const (
	defaultDurationRuns = 50
	maxDurationRuns     = 500
)

func (s *runHandlers) jobDurations(c *gin.Context) {
	name := c.Param("jobName")
	if _, err := s.regOf(c).Config().Job(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	limit := defaultDurationRuns
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDurationRuns {
			writeError(c, s.log, fmt.Errorf("%w: limit must be 1 to %d, got %q", ErrBadRequest, maxDurationRuns, v))
			return
		}
		limit = n
	}
	out := durationsView{JobName: name, Runs: []durationRun{}}
	if s.hist == nil {
		c.JSON(http.StatusOK, out)
		return
	}
	registered, err := s.regOf(c).Config().JobRegisteredAt(c, name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	// Finished runs only: a page of the newest rows with a little room for
	// those still running.
	page, err := s.hist.Executions(c, view.Query{Page: 1, PerPage: min(limit*2, view.MaxPerPage), Sort: "startTime", Order: "desc",
		Start: historyFrom(registered), Filters: map[string]string{"jobName": name}})
	if err != nil {
		writeError(c, s.log, queryError(err))
		return
	}
	var ok []time.Duration
	for _, e := range page.Rows {
		if e.DurationMs == nil || e.StartTime == nil || len(out.Runs) == limit {
			continue
		}
		out.Runs = append(out.Runs, durationRun{e.TaskID, e.ShardingItem, e.StartTime.UTC(), *e.DurationMs, e.Success})
		if e.Success {
			ok = append(ok, time.Duration(*e.DurationMs)*time.Millisecond)
		}
	}
	out.Typical = estimate.Of(ok)
	c.JSON(http.StatusOK, out)
}
