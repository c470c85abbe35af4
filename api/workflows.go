package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
	"github.com/gin-gonic/gin"
)

// workflowHandlers serve /api/workflow: configs, runs and their history.
type workflowHandlers struct {
	*core
	*scheduleHandlers
	hist requestHistory // nil: history off
}

// checkWorkflow validates a config and its nodes' jobs, and fills in each
// node's default trigger rule so the stored config says it.
func (s *workflowHandlers) checkWorkflow(ctx context.Context, c *workflow.Config) error {
	if err := c.Validate(s.clock.Now(), s.location, func(name string) (workflow.JobInfo, error) {
		j, err := s.regIn(ctx).Config().Job(ctx, name)
		if errors.Is(err, registry.ErrJobNotFound) {
			return workflow.JobInfo{}, nil
		}
		if err != nil {
			return workflow.JobInfo{}, err
		}
		return workflow.JobInfo{Exists: true, Transient: j.JobExecutionType == jobs.Transient}, nil
	}); err != nil {
		return err
	}
	if c.Calendar != "" {
		p, loc, err := s.workflowPlan(ctx, *c)
		if errors.Is(err, registry.ErrCalendarNotFound) {
			return fmt.Errorf("%w: calendar %q: the namespace has no such calendar", ErrBadRequest, c.Calendar)
		}
		if err != nil {
			return err
		}
		if p != nil && p.Next(s.clock.Now(), loc).IsZero() {
			return fmt.Errorf("%w: calendar %q excludes every fire of the workflow's cron", ErrBadRequest, c.Calendar)
		}
	}
	for i := range c.Nodes {
		c.Nodes[i].Trigger = c.Nodes[i].RuleOf()
	}
	return nil
}

func (s *workflowHandlers) registerWorkflow(c *gin.Context) {
	s.saveWorkflow(c, s.regOf(c).Flows().AddWorkflow)
}

// updateWorkflow replaces a workflow's config whole (runs in flight keep
// the definition they started with).
func (s *workflowHandlers) updateWorkflow(c *gin.Context) {
	s.saveWorkflow(c, func(ctx context.Context, cfg workflow.Config) error {
		if _, err := s.regIn(ctx).Flows().Workflow(ctx, cfg.Name); err != nil {
			return err
		}
		if err := s.checkNotOwned(ctx, DefWorkflow, cfg.Name); err != nil {
			return err
		}
		return s.regIn(ctx).Flows().UpdateWorkflow(ctx, cfg)
	})
}

func (s *workflowHandlers) saveWorkflow(c *gin.Context, write func(context.Context, workflow.Config) error) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	cfg := workflow.Default()
	err = decodeStrict(body, &cfg)
	if err == nil {
		err = s.checkWorkflow(c, &cfg)
	}
	if err == nil {
		err = write(c, cfg)
	}
	s.answerWorkflow(c, cfg, err)
}

// answerWorkflow answers err, or else the workflow's view.
func (s *workflowHandlers) answerWorkflow(c *gin.Context, cfg workflow.Config, err error) {
	var v workflowView
	if err == nil {
		v, err = s.workflowView(c, cfg, nil)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// workflowView is a workflow's config with its state: disabled, how many
// runs are active and queued, its latest run and its next cron fire.
type workflowView struct {
	workflow.Config
	Disabled     bool        `json:"disabled"`
	ActiveRuns   int         `json:"activeRuns"`
	QueuedRuns   int         `json:"queuedRuns"`
	LastRun      *runSummary `json:"lastRun,omitempty"`
	NextFireTime *time.Time  `json:"nextFireTime,omitempty"`
}

func (s *workflowHandlers) workflowView(ctx context.Context, cfg workflow.Config, disabled map[string]bool) (workflowView, error) {
	v := workflowView{Config: cfg}
	if disabled == nil {
		d, err := s.regIn(ctx).Config().IsDisabled(ctx, "workflow", cfg.Name)
		if err != nil {
			return v, err
		}
		v.Disabled = d
	} else {
		v.Disabled = disabled[cfg.Name]
	}
	runs, err := s.regIn(ctx).Flows().WorkflowRuns(ctx, cfg.Name)
	if err != nil {
		return v, err
	}
	for _, r := range runs {
		if r.Active() {
			v.ActiveRuns++
		}
		if r.State == workflow.RunQueued {
			v.QueuedRuns++
		}
	}
	if len(runs) > 0 {
		last := summarize(runs[len(runs)-1])
		v.LastRun = &last
	}
	if sch, loc, err := s.workflowPlan(ctx, cfg); err == nil && sch != nil && !v.Disabled {
		if next := sch.Next(s.clock.Now(), loc); !next.IsZero() {
			v.NextFireTime = &next
		}
	}
	return v, nil
}

func (s *workflowHandlers) getWorkflow(c *gin.Context) {
	cfg, err := s.regIn(c).Flows().Workflow(c, c.Param("workflowName"))
	s.answerWorkflow(c, cfg, err)
}

// pageOf reads page (from 1) and per_page (default 20, at most 1000).
func pageOf(c *gin.Context) (page, perPage int, err error) {
	page, perPage = 1, 20
	for _, p := range []struct {
		name string
		dst  *int
	}{{"page", &page}, {"per_page", &perPage}} {
		raw := strings.TrimSpace(c.Query(p.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("%w: %s must be a positive integer, got %q", ErrBadRequest, p.name, raw)
		}
		*p.dst = n
	}
	return page, min(perPage, 1000), nil
}

// pageRows is a page of a list: the rows' total and the page's rows.
type pageRows[T any] struct {
	Total int `json:"total"`
	Rows  []T `json:"rows"`
}

func paged[T any](all []T, page, perPage int) pageRows[T] {
	out := pageRows[T]{Total: len(all), Rows: []T{}}
	if lo := (page - 1) * perPage; lo < len(all) {
		out.Rows = all[lo:min(len(all), lo+perPage)]
	}
	return out
}

func (s *workflowHandlers) listWorkflows(c *gin.Context) {
	page, perPage, err := pageOf(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	all, err := s.regIn(c).Flows().Workflows(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	off, err := s.regIn(c).Config().Disabled(c, "workflow")
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	all = matchWorkflows(all, c.Query("q"))
	if all, err = keepDisabled(all, off, c.Query("disabled")); err != nil {
		writeError(c, s.log, err)
		return
	}
	p := paged(all, page, perPage)
	rows := make([]workflowView, 0, len(p.Rows))
	for _, cfg := range p.Rows {
		v, err := s.workflowView(c, cfg, off)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		rows = append(rows, v)
	}
	c.JSON(http.StatusOK, pageRows[workflowView]{Total: p.Total, Rows: rows})
}

// matchWorkflows keeps the workflows whose name, description, cron or a
// node's id or job contains q (case-insensitive); an empty q keeps all.
func matchWorkflows(all []workflow.Config, q string) []workflow.Config {
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return all
	}
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), q) }
	out := make([]workflow.Config, 0, len(all))
	for _, cfg := range all {
		ok := has(cfg.Name) || has(cfg.Description) || has(cfg.Cron)
		for i := 0; !ok && i < len(cfg.Nodes); i++ {
			ok = has(cfg.Nodes[i].ID) || has(cfg.Nodes[i].Job)
		}
		if ok {
			out = append(out, cfg)
		}
	}
	return out
}

// keepDisabled keeps the disabled workflows (want "true"), the enabled
// ones ("false"), or all ("").
func keepDisabled(all []workflow.Config, off map[string]bool, want string) ([]workflow.Config, error) {
	if want == "" {
		return all, nil
	}
	d, err := strconv.ParseBool(want)
	if err != nil {
		return nil, fmt.Errorf("%w: disabled must be true or false, got %q", ErrBadRequest, want)
	}
	out := make([]workflow.Config, 0, len(all))
	for _, cfg := range all {
		if off[cfg.Name] == d {
			out = append(out, cfg)
		}
	}
	return out, nil
}

func (s *workflowHandlers) deleteWorkflow(c *gin.Context) {
	err := s.checkNotOwned(c, DefWorkflow, c.Param("workflowName"))
	if err == nil {
		err = s.regIn(c).Flows().DeleteWorkflow(c, c.Param("workflowName"), s.clock.Now())
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// setWorkflowDisabled stops (or resumes) new runs: a disabled workflow's
// cron does not fire, triggers are refused and queued runs wait; runs
// already RUNNING go on.
func (s *workflowHandlers) setWorkflowDisabled(disabled bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		name := c.Param("workflowName")
		_, err := s.regIn(c).Flows().Workflow(c, name)
		if err == nil {
			err = s.regIn(c).Config().SetDisabled(c, "workflow", name, disabled, s.clock.Now())
		}
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		c.Status(http.StatusNoContent)
	}
}

// workflowTrigger is the body of POST /api/workflow/{name}/trigger (optional).
type workflowTrigger struct {
	Parameter      *string `json:"parameter"`
	IdempotencyKey string  `json:"idempotencyKey"`
}

// triggerWorkflow queues a run (it starts when a slot under
// maxConcurrentRuns is free) and answers its id; a key seen in the last 24
// hours answers the run it created.
func (s *workflowHandlers) triggerWorkflow(c *gin.Context) {
	name := c.Param("workflowName")
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req workflowTrigger
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			writeError(c, s.log, err)
			return
		}
	}
	id, dup, err := s.queueWorkflowRun(c, name, req)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	run, err := s.regIn(c).Flows().WorkflowRun(c, name, id)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"workflow": name, "runId": id, "duplicate": dup, "state": run.State})
}

func (s *workflowHandlers) queueWorkflowRun(c *gin.Context, name string, req workflowTrigger) (string, bool, error) {
	if req.IdempotencyKey != "" && !idempotencyKeyRE.MatchString(req.IdempotencyKey) {
		return "", false, fmt.Errorf("%w: idempotencyKey must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", ErrBadRequest)
	}
	if req.Parameter != nil && len(*req.Parameter) > workflow.MaxParameterBytes {
		return "", false, fmt.Errorf("%w: parameter must be at most %d bytes", ErrBadRequest, workflow.MaxParameterBytes)
	}
	cfg, err := s.regIn(c).Flows().Workflow(c, name)
	if err != nil {
		return "", false, err
	}
	if d, err := s.regIn(c).Config().IsDisabled(c, "workflow", name); err != nil || d {
		if err == nil {
			err = fmt.Errorf("%w: the workflow '%s' is disabled; enable it first.", ErrConflict, name)
		}
		return "", false, err
	}
	now := s.clock.Now()
	run := workflow.NewRun(cfg, workflow.NewRunID(now, ""), workflow.SourceAPI, req.Parameter, req.IdempotencyKey, now)
	return s.regIn(c).Flows().CreateWorkflowRun(c, run, workflow.MaxQueuedRuns)
}
