package backfill

import (
	"context"
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

// A workflow's backfill queues one workflow run per instant (Source
// BACKFILL, ScheduledAt the instant, id registry.BackfillWorkflowRunID),
// created in the same fenced commit as the instant's done node
// (registry.EnqueueBackfillWorkflowRun). The workflow engine begins such a
// run at once, outside maxConcurrentRuns, and hands its nodes' executions
// the instant; the loop queues the next only while no live run of the
// workflow (cron or API) is queued or running and no run of a backfill
// waits.

// wfView is what one pass reads of a workflow for its backfill.
type wfView struct {
	cfg      workflow.Config
	missing  bool
	disabled bool
	runs     map[string]workflow.Run // by id
	busy     bool
}

func (l *Loop) readWorkflow(ctx context.Context, key string) (wfView, error) {
	v := wfView{runs: map[string]workflow.Run{}}
	cfg, err := l.Registry.Flows().Workflow(ctx, key)
	switch {
	case errors.Is(err, workflow.ErrNotFound):
		v.missing = true
		return v, nil
	case err != nil:
		return v, err
	}
	v.cfg = cfg
	if v.disabled, err = l.Registry.Config().IsDisabled(ctx, "workflow", key); err != nil {
		return v, err
	}
	runs, err := l.Registry.Flows().WorkflowRuns(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	for _, r := range runs {
		v.runs[r.ID] = r
		switch {
		case r.State.Final():
		case r.Source != workflow.SourceBackfill:
			v.busy = true // a live run in flight
		case r.State == workflow.RunQueued:
			v.busy = true // a backfill's run not begun yet
		}
	}
	return v, nil
}

// outcome is what became of a backfill's workflow run.
func (v wfView) outcome(id string) Outcome {
	r, ok := v.runs[id]
	switch {
	case !ok:
		return Unseen
	case r.State == workflow.RunSucceeded:
		return Succeeded
	case r.State.Final():
		return FailedRun
	}
	return Pending
}

// advanceWorkflow is advance for a workflow's backfill.
func (l *Loop) advanceWorkflow(ctx context.Context, b Backfill, st *snapshot) (bool, error) {
	now := l.Clock.Now()
	wv, err := l.readWorkflow(ctx, b.Key())
	if err != nil {
		return false, err
	}
	spare := true
	if !wv.missing {
		if spare, err = st.spareForWorkflow(ctx, l.Registry, b.Key(), wv.cfg); err != nil {
			return false, err
		}
	}
	v := View{Now: now, Outcome: wv.outcome, Busy: wv.busy || !spare, Runnable: !wv.missing && !wv.disabled, Missing: wv.missing}
	next, n := Step(b, v)
	queued, dirty, err := l.queueNext(ctx, b, &next, n, now, func(at time.Time) (string, string, error) {
		run := workflow.NewRun(wv.cfg, registry.BackfillWorkflowRunID(at), workflow.SourceBackfill, nil, "", now)
		run.ScheduledAt, run.Backfill = at.UTC(), b.ID
		owner, err := l.Registry.Schedule().EnqueueBackfillWorkflowRun(ctx, run)
		return run.ID, owner, err
	})
	if err != nil {
		return false, err
	}
	return l.save(ctx, b, next, dirty, queued)
}
