package flowengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// Cron: each workflow with a cron fires runs at its instants. A fire is
// one commit: the run (id from the instant: NewRunID(at, "cron"), so a
// fire made twice creates one run) and the workflow's watermark
// (registry.WorkflowState.FiredUntil). A new leader replays the fires
// after the watermark up to its start by the misfire rule.

// schedule computes a workflow's next fire after from (none when it has
// no cron or is disabled).
func (e *Engine) schedule(name string, from time.Time) {
	delete(e.nextFire, name)
	d, ok := e.defs[name]
	if !ok || e.disabled[name] {
		return
	}
	sch, loc, err := e.plan(d)
	if err != nil || sch == nil {
		if err != nil {
			e.Log.Warn("workflow engine: workflow not scheduled", "workflow", name, "err", err)
		}
		return
	}
	if next := sch.Next(from, loc); !next.IsZero() {
		e.nextFire[name] = next
	}
}

// plan is a workflow's schedule as it fires and the zone it is read in
// (timing.Inputs.Plan over the inputs the engine read last: no read here).
func (e *Engine) plan(d workflow.Config) (*cron.Plan, *time.Location, error) {
	return e.inputs.Plan(d.Timing(), nil)
}

// readInputs reads what plans read besides the workflows' schedules (the
// calendars, the namespaces' jitter windows) on the engine's context: at
// its start, at each sweep, and when a workflow names a calendar the last
// read did not hold. A failed read keeps the last ones in force.
func (e *Engine) readInputs(ctx context.Context) error {
	in, err := e.Registry.Schedule().TimingInputs(ctx, e.Options.Jitter, e.Options.Location)
	if err != nil {
		return fmt.Errorf("workflow engine: read the calendars and jitter windows: %w", err)
	}
	e.inputs = in
	return nil
}

// calendarUnread reports a workflow naming a calendar the inputs do not
// hold (made since they were read, or gone).
func (e *Engine) calendarUnread(d workflow.Config) bool {
	t := d.Timing()
	if t.Calendar == "" || !t.Has() {
		return false
	}
	_, ok := e.inputs.Calendars[timing.CalendarKey(namespace.Of(d.Name), t.Calendar)]
	return !ok
}

// fireDue makes the fires due at now.
func (e *Engine) fireDue(ctx context.Context, now time.Time) error {
	for name, at := range e.nextFire {
		if at.After(now) {
			continue
		}
		if err := e.fire(ctx, name, []time.Time{at}); err != nil {
			return err
		}
		e.schedule(name, at)
		if next, ok := e.nextFire[name]; ok && !next.After(now) {
			e.schedule(name, now) // fires missed while the loop was busy collapse
		}
	}
	return nil
}

// catchUp replays, per workflow, the cron fires after its watermark up to
// now: misfire=false makes one run for all of them, misfire=true one per
// fire (at most MaxMissedFires). A workflow without a watermark (new, or
// never fired) gets one at now and nothing is replayed.
func (e *Engine) catchUp(ctx context.Context) error {
	now := e.Clock.Now()
	for name, d := range e.defs {
		if e.disabled[name] {
			continue
		}
		sch, loc, err := e.plan(d)
		if err != nil || sch == nil {
			continue
		}
		st, err := e.Registry.Flows().WorkflowStateOf(ctx, name)
		if err != nil {
			return fmt.Errorf("workflow engine: read the cron watermark of %s: %w", name, err)
		}
		if st.FiredUntil.IsZero() {
			if err := e.markFired(ctx, name, now); err != nil {
				return err
			}
			continue
		}
		var missed []time.Time
		for t := st.FiredUntil; len(missed) < e.Options.MaxMissedFires; {
			next := sch.Next(t, loc)
			if next.IsZero() || next.After(now) {
				break
			}
			missed, t = append(missed, next), next
		}
		if len(missed) == 0 {
			continue
		}
		e.Log.Info("workflow engine: cron fires no leader made", "workflow", name, "since", st.FiredUntil, "fires", len(missed), "misfire", d.Misfire)
		if err := e.fire(ctx, name, missed); err != nil {
			return err
		}
		e.schedule(name, now)
	}
	return nil
}

// markFired sets a workflow's watermark.
func (e *Engine) markFired(ctx context.Context, name string, at time.Time) error {
	err := e.Registry.Change().PutWorkflowState(name, registry.WorkflowState{FiredUntil: at.UTC()}).Commit(ctx)
	if errors.Is(err, registry.ErrFenced) {
		return fmt.Errorf("workflow engine: %w", err)
	}
	if err != nil {
		e.Log.Warn("workflow engine: write the cron watermark", "workflow", name, "err", err)
	}
	return nil
}

// fire makes runs for cron instants (oldest first) and moves the
// watermark to the last. A fire that arrives while maxConcurrentRuns runs
// are active waits as QUEUED; with misfire=false such fires collapse into
// one queued cron run.
func (e *Engine) fire(ctx context.Context, name string, instants []time.Time) error {
	d, ok := e.defs[name]
	if !ok || len(instants) == 0 {
		return nil
	}
	last := instants[len(instants)-1]
	if !d.Misfire {
		instants = instants[len(instants)-1:]
	}
	running, queued, queuedCron := e.slots(name)
	ch := e.Registry.Change().PutWorkflowState(name, registry.WorkflowState{FiredUntil: last.UTC()})
	var made []workflow.Run
	for _, at := range instants {
		atLimit := running+queued >= d.MaxConcurrentRuns
		switch {
		case atLimit && !d.Misfire && queuedCron > 0:
			e.Log.Info("workflow engine: cron fire collapsed into the queued run", "workflow", name, "at", at)
			continue
		case queued >= workflow.MaxQueuedRuns:
			e.Log.Warn("workflow engine: cron fire dropped: too many queued runs", "workflow", name, "at", at, "queued", queued)
			continue
		}
		id := workflow.NewRunID(at, "cron")
		if _, err := e.Registry.Flows().WorkflowRun(ctx, name, id); err == nil {
			continue // made before the watermark moved (by an earlier leader)
		}
		run := workflow.NewRun(d, id, workflow.SourceCron, nil, "", at)
		ch.CreateWorkflowRun(run)
		made = append(made, run)
		queued++
		queuedCron++
	}
	err := ch.Commit(ctx)
	if errors.Is(err, registry.ErrFenced) {
		return fmt.Errorf("workflow engine: %w", err)
	}
	if err != nil {
		e.Log.Error("workflow engine: cron fire", "workflow", name, "at", last, "err", err)
		return nil
	}
	for _, r := range made {
		e.track(r)
		e.dirty[runRef{name, r.ID}] = true
		if e.Observer != nil {
			e.Observer.RunChanged(workflow.Run{}, r)
		}
	}
	return nil
}

// slots counts a workflow's live runs (a backfill's are not): RUNNING,
// QUEUED, and QUEUED cron fires.
func (e *Engine) slots(name string) (running, queued, queuedCron int) {
	for _, tr := range e.active[name] {
		switch {
		case tr.backfill:
		case tr.state == workflow.RunRunning:
			running++
		case tr.state == workflow.RunQueued && !tr.cancelling:
			queued++
			if tr.cron {
				queuedCron++
			}
		}
	}
	return running, queued, queuedCron
}
