package flowengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// Cron: the producer (scheduler.Producer) holds each workflow's schedule
// in the leader's one timetable beside the jobs' and hands its fires in
// (FireFlow); the engine makes the runs. A fire is one commit: the run
// (id from the instant: NewRunID(at, "cron"), so a fire made twice, by
// two leaders, creates one run) and the workflow's watermark
// (registry.WorkflowState.FiredUntil). A new leader's producer replays
// the fires after the watermark up to its start by the misfire rule.

// Timetable is the leader's one timetable as the engine feeds it
// (scheduler.Producer): each workflow's schedule, versioned by config,
// and at a term's start its watermark, after which the instants no
// leader fired are fired first. A change binds when the timetable takes
// it: an instant that had come by then is the old schedule's, and its
// fire runs once handed over, even if the engine takes it after the
// change; a later instant is the new schedule's (fire). Neither call may
// wait on the engine.
type Timetable interface {
	ScheduleFlow(workflow string, s timing.Schedule, config uint64, since time.Time)
	UnscheduleFlow(workflow string)
}

// ErrStopped: the engine's loop is not running (its term ended).
var ErrStopped = errors.New("workflow engine: stopped")

// fireReq is one FireFlow call waiting for the loop.
type fireReq struct {
	workflow string
	config   uint64
	instants []time.Time
}

// FireFlow hands workflow's cron fires to the engine's loop, which makes
// their runs in the order handed (scheduler.FlowRuns). It never waits
// for the loop: the producer's one timer serves the jobs too, and a long
// round of the engine must not make their fires late. Safe from any
// goroutine; an error: the engine's loop has ended.
func (e *Engine) FireFlow(_ context.Context, workflow string, config uint64, instants []time.Time) error {
	e.firesMu.Lock()
	defer e.firesMu.Unlock()
	select {
	case <-e.stopped:
		return ErrStopped
	default:
	}
	e.fires = append(e.fires, fireReq{workflow: workflow, config: config, instants: instants})
	select {
	case e.fired <- struct{}{}:
	default:
	}
	return nil
}

// takeFires makes the runs of the fires handed in, oldest first.
func (e *Engine) takeFires(ctx context.Context) error {
	e.firesMu.Lock()
	reqs := e.fires
	e.fires = nil
	e.firesMu.Unlock()
	for _, r := range reqs {
		if err := e.fire(ctx, r.workflow, r.config, r.instants); err != nil {
			return err
		}
	}
	return nil
}

// schedule hands a workflow's schedule to the timetable, or takes it
// away (deleted, disabled, no cron). since, when set, is its watermark at
// the term's start (the producer replays the instants after it).
func (e *Engine) schedule(name string, since time.Time) {
	if e.Timetable == nil {
		return
	}
	e.version++
	d, ok := e.defs[name]
	if !ok || e.disabled[name] || !d.Timing().Has() {
		delete(e.scheduled, name)
		e.Timetable.UnscheduleFlow(name)
		return
	}
	if _, ok := e.scheduled[name]; !ok {
		e.scheduled[name] = e.version
	}
	e.Timetable.ScheduleFlow(name, d.Timing(), e.version, since)
}

// scheduleAll hands every workflow's schedule to the timetable (at the
// term's start and after a resync), and takes away those of workflows
// gone. At the start each comes with its watermark: a workflow without
// one (new, or never fired) gets one at now, and nothing is replayed for
// it.
func (e *Engine) scheduleAll(ctx context.Context, start bool) error {
	now := e.Clock.Now()
	for name := range e.scheduled {
		if _, ok := e.defs[name]; !ok {
			e.schedule(name, time.Time{})
		}
	}
	for name, d := range e.defs {
		var since time.Time
		if start && !e.disabled[name] && d.Timing().Has() {
			st, err := e.Registry.Flows().WorkflowStateOf(ctx, name)
			if err != nil {
				return fmt.Errorf("workflow engine: read the cron watermark of %s: %w", name, err)
			}
			if st.FiredUntil.IsZero() {
				if err := e.markFired(ctx, name, now); err != nil {
					return err
				}
			}
			since = st.FiredUntil
		}
		e.schedule(name, since)
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
// watermark to the last. A fire of a schedule since replaced is made
// still: the timetable hands a fire over only once its instant has come,
// and takes a change only for the instants after it, so a fire handed
// over before the change reached the engine is its instant's only one
// (voided, the instant would run under neither schedule). A fire from
// before the workflow was disabled, deleted or left without a cron is
// void (config older than its schedule's first version since). A fire that arrives while maxConcurrentRuns runs are
// active waits as QUEUED; with misfire=false such fires collapse into
// one queued cron run.
func (e *Engine) fire(ctx context.Context, name string, config uint64, instants []time.Time) error {
	d, ok := e.defs[name]
	if since, scheduled := e.scheduled[name]; !ok || !scheduled || config < since || len(instants) == 0 {
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
	now := e.Clock.Now()
	fo, _ := e.Observer.(FireObserver)
	for _, r := range made {
		e.track(r)
		e.dirty[runRef{name, r.ID}] = true
		if e.Observer != nil {
			e.Observer.RunChanged(workflow.Run{}, r)
		}
		if fo != nil && !r.CreatedAt.Before(e.began) { // a cron run is created at its instant
			fo.CronFired(r.CreatedAt, now)
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
