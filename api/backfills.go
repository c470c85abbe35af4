package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/backfill"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/gin-gonic/gin"
)

// backfillHandlers serve /api/job/backfills, of jobs and workflows.
type backfillHandlers struct {
	*core
	*jobHandlers
}

// backfillRequest is POST /api/job/backfills' body: a past range
// [from, to) of the job's (or workflow's) plan, at most concurrency runs
// in flight (0: 1).
type backfillRequest struct {
	JobName      string    `json:"jobName"`
	WorkflowName string    `json:"workflowName"`
	From         time.Time `json:"from"`
	To           time.Time `json:"to"`
	Concurrency  int       `json:"concurrency"`
	// MaxRuns confirms a range of more than backfill.ConfirmAbove runs:
	// it must be at least the range's count (0: none confirmed).
	MaxRuns int `json:"maxRuns"`
}

// backfillView is a backfill as the API shows it: its record and progress.
type backfillView struct {
	ID          string            `json:"id"`
	JobName     string            `json:"jobName,omitempty"`
	Workflow    string            `json:"workflowName,omitempty"`
	From        time.Time         `json:"from"`
	To          time.Time         `json:"to"`
	Concurrency int               `json:"concurrency"`
	State       string            `json:"state"`
	Progress    backfill.Progress `json:"progress"`
	InFlight    []time.Time       `json:"inFlight"`
	// FailedInstants are the instants whose runs failed or were lost: a
	// new backfill of the range runs them again.
	FailedInstants []time.Time `json:"failedInstants"`
	CreatedBy      string      `json:"createdBy,omitempty"`
	CreatedAt      time.Time   `json:"createdAt"`
	UpdatedAt      time.Time   `json:"updatedAt"`
	EndedAt        *time.Time  `json:"endedAt,omitempty"`
}

func viewOf(b backfill.Backfill) backfillView {
	v := backfillView{ID: b.ID, JobName: b.JobName(), Workflow: b.WorkflowName(), From: b.From, To: b.To, Concurrency: b.Concurrency, State: b.State,
		Progress: b.Progress(), InFlight: []time.Time{}, FailedInstants: b.FailedInstants(), CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	for _, f := range b.InFlight {
		v.InFlight = append(v.InFlight, f.At)
	}
	if !b.EndedAt.IsZero() {
		v.EndedAt = &b.EndedAt
	}
	return v
}

var backfillSeq atomic.Uint32

// startBackfill answers POST /api/job/backfills: it computes the job's
// instants in [from, to) with the plan the leader fires (crons, H,
// jitter, calendar) and stores the backfill; the leader's loop queues its
// runs (201 with the backfill).
func (s *backfillHandlers) startBackfill(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req backfillRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(c, s.log, fmt.Errorf("%w: a backfill is {\"jobName\" or \"workflowName\", \"from\", \"to\", \"concurrency\"} with RFC 3339 times: %v", ErrBadRequest, err))
		return
	}
	now := s.clock.Now()
	if (req.JobName == "") == (req.WorkflowName == "") {
		writeError(c, s.log, fmt.Errorf("%w: a backfill names either a jobName or a workflowName", ErrBadRequest))
		return
	}
	if err := backfill.Check(req.From, req.To, req.Concurrency, now); err != nil {
		writeError(c, s.log, err)
		return
	}
	src, p, loc, err := s.backfillSource(c, req)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	from, to := req.From.Truncate(time.Second), req.To.Truncate(time.Second)
	ins, err := backfill.Instants(func(a, b time.Time, limit int) ([]time.Time, bool) { return p.Between(a, b, loc, limit) }, p.Offset, from, to)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if len(ins) == 0 {
		writeError(c, s.log, fmt.Errorf("%w: %s '%s' has no instant in [%s, %s)", ErrBadRequest, src.Kind, src.Name, from.Format(time.RFC3339), to.Format(time.RFC3339)))
		return
	}
	if err := backfill.Confirmed(len(ins), req.MaxRuns); err != nil {
		writeError(c, s.log, err)
		return
	}
	b := backfill.New(backfill.NewID(now, backfillSeq.Add(1)), src, from, to, req.Concurrency, ins, triggeredBy(c), now)
	if err := backfill.Create(c, s.reg, b, ins); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusCreated, viewOf(b))
}

// backfillSource is the request's source and its schedule's plan as the
// leader fires it (crons, H, jitter, calendar: timing.Schedule, the one
// value of jobs and workflows) with the zone it is read in. A job must
// be triggerable, a workflow enabled, and either must have a cron.
func (s *backfillHandlers) backfillSource(c *gin.Context, req backfillRequest) (backfill.Source, *cron.Plan, *time.Location, error) {
	ns := nsOf(c)
	var (
		src backfill.Source
		p   *cron.Plan
		loc *time.Location
		err error
	)
	if name := req.WorkflowName; name != "" {
		src = backfill.WorkflowSource(ns, name)
		cfg, err := s.regOf(c).Flows().Workflow(c, name)
		if err != nil {
			return src, nil, nil, err
		}
		if d, err := s.regOf(c).Config().IsDisabled(c, "workflow", name); err != nil || d {
			if err == nil {
				err = fmt.Errorf("%w: the workflow '%s' is disabled; enable it first.", ErrConflict, name)
			}
			return src, nil, nil, err
		}
		p, loc, err = s.workflowPlan(c, cfg)
	} else {
		src = backfill.JobSource(ns, req.JobName)
		cfg, err := s.triggerable(c, req.JobName)
		if err != nil {
			return src, nil, nil, err
		}
		if !cfg.Timing().Has() {
			return src, nil, nil, fmt.Errorf("%w: job '%s' has no cron: a backfill runs the instants of its schedule", ErrBadRequest, req.JobName)
		}
		p, loc, err = s.jobPlan(c, cfg)
	}
	if err == nil && p == nil {
		err = fmt.Errorf("%w: %s '%s' has no cron: a backfill runs the instants of its schedule", ErrBadRequest, src.Kind, src.Name)
	}
	return src, p, loc, err
}

// listBackfills answers GET /api/job/backfills (?jobName=, ?workflowName=): the request's
// namespace's backfills, newest first.
func (s *backfillHandlers) listBackfills(c *gin.Context) {
	bs, err := backfill.List(c, s.reg, nsOf(c))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	out := []backfillView{}
	for _, b := range bs {
		job, wf := c.Query("jobName"), c.Query("workflowName")
		if (job == "" || b.JobName() == job) && (wf == "" || b.WorkflowName() == wf) {
			out = append(out, viewOf(b))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	c.JSON(http.StatusOK, out)
}

// backfillIn reads a backfill of the request's namespace (another
// namespace's is not found).
func (s *backfillHandlers) backfillIn(c *gin.Context, id string) (backfill.Backfill, error) {
	b, err := backfill.Get(c, s.reg, id)
	if err == nil && b.Source.Namespace != nsOf(c) {
		return b, fmt.Errorf("%w: no backfill '%s' in namespace '%s'", ErrNotFound, id, nsOf(c))
	}
	return b, err
}

// getBackfill answers GET /api/job/backfills/{id}.
func (s *backfillHandlers) getBackfill(c *gin.Context) {
	b, err := s.backfillIn(c, c.Param("id"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, viewOf(b))
}

// controlBackfill answers POST /api/job/backfills/{id}/pause|resume|cancel.
func (s *backfillHandlers) controlBackfill(c *gin.Context) {
	id, action := c.Param("id"), c.Param("action")
	if action != "pause" && action != "resume" && action != "cancel" {
		writeError(c, s.log, fmt.Errorf("%w: no action %q on a backfill (pause, resume or cancel)", ErrNotFound, action))
		return
	}
	if _, err := s.backfillIn(c, id); err != nil {
		writeError(c, s.log, err)
		return
	}
	b, err := backfill.Apply(c, s.reg, id, action, s.clock.Now())
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, viewOf(b))
}
