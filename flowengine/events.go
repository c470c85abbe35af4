package flowengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// What the engine follows in the registry, and what it does on a change.

// watch follows every path the engine follows (registry.WatchWorkflows).
func (e *Engine) watch(ctx context.Context) (<-chan registry.WorkflowChange, error) {
	ch, err := e.Registry.WatchWorkflows(ctx)
	if err != nil {
		return nil, fmt.Errorf("workflow engine: %w", err)
	}
	return ch, nil
}

// handle applies one registry change.
func (e *Engine) handle(ctx context.Context, ev registry.WorkflowChange) error {
	switch ev.Kind {
	case registry.WorkflowAll:
		if err := e.load(ctx); err != nil {
			return err
		}
		return e.scheduleAll(ctx, false)
	case registry.WorkflowDef:
		return e.reloadDef(ctx, ev.Workflow)
	case registry.WorkflowFlag:
		return e.reloadDisabled(ctx, ev.Workflow)
	case registry.WorkflowRecord:
		if ref, mine := e.owners[ev.Key]; mine {
			e.dirty[ref] = true
		}
		return nil
	}
	ref := runRef{ev.Workflow, ev.RunID}
	if tr := e.active[ref.wf][ref.id]; tr != nil && !ev.Deleted && ev.Version == tr.version {
		return nil // our own write
	}
	if ev.Deleted {
		e.forget(ref)
		return nil
	}
	e.dirty[ref] = true
	return nil
}

// load reads every workflow and active run (at start and after a resync).
func (e *Engine) load(ctx context.Context) error {
	names, err := e.Registry.Flows().WorkflowNames(ctx)
	if err != nil {
		return fmt.Errorf("workflow engine: list workflows: %w", err)
	}
	dis, err := e.Registry.Config().Disabled(ctx, "workflow")
	if err != nil {
		return fmt.Errorf("workflow engine: load disable flags: %w", err)
	}
	clear(e.defs)
	for _, name := range names {
		d, err := e.Registry.Flows().Workflow(ctx, name)
		if isUnreadable(err) {
			e.Log.Error("workflow engine: a workflow's config cannot be read; it is left alone", "workflow", name, "err", err)
			continue
		}
		if err != nil && !errors.Is(err, workflow.ErrNotFound) {
			return fmt.Errorf("workflow engine: load workflow %s: %w", name, err)
		}
		if err == nil {
			e.defs[name] = d
		}
	}
	e.disabled = dis
	if names, err = e.Registry.Flows().WorkflowRunNames(ctx); err != nil {
		return fmt.Errorf("workflow engine: list runs: %w", err)
	}
	clear(e.active)
	clear(e.owners)
	for _, name := range names {
		if err := e.loadRuns(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// loadRuns tracks a workflow's active runs (one that cannot be read is
// left alone, with an error in the log).
func (e *Engine) loadRuns(ctx context.Context, name string) error {
	ids, err := e.Registry.Flows().WorkflowRunIDs(ctx, name)
	if err != nil {
		return fmt.Errorf("workflow engine: list runs of %s: %w", name, err)
	}
	for _, id := range ids {
		r, err := e.Registry.Flows().WorkflowRun(ctx, name, id)
		switch {
		case isUnreadable(err):
			e.Log.Error("workflow engine: a run cannot be read; it is left alone", "workflow", name, "run", id, "err", err)
		case errors.Is(err, workflow.ErrRunNotFound):
		case err != nil:
			return fmt.Errorf("workflow engine: load run %s of %s: %w", id, name, err)
		case r.Active():
			e.track(r)
			e.dirty[runRef{r.Workflow, r.ID}] = true
		}
	}
	return nil
}

// isUnreadable reports a registry value that does not decode (written by
// hand or by another version; registry.ErrDamaged): skipped, never fatal.
func isUnreadable(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.Is(err, registry.ErrDamaged) || errors.As(err, &se) || errors.As(err, &te)
}

func (e *Engine) reloadDef(ctx context.Context, name string) error {
	d, err := e.Registry.Flows().Workflow(ctx, name)
	switch {
	case isUnreadable(err):
		e.Log.Error("workflow engine: a workflow's config cannot be read; it is left alone", "workflow", name, "err", err)
		return nil
	case errors.Is(err, workflow.ErrNotFound):
		delete(e.defs, name)
		e.schedule(name, time.Time{})
	case err != nil:
		return fmt.Errorf("workflow engine: read workflow %s: %w", name, err)
	default:
		_, known := e.defs[name]
		e.defs[name] = d
		if sch, _ := d.Schedule(); !known && sch != nil {
			if err := e.markFired(ctx, name, e.Clock.Now()); err != nil {
				return err
			}
		}
		e.schedule(name, time.Time{})
	}
	e.markWorkflow(name)
	return nil
}

func (e *Engine) reloadDisabled(ctx context.Context, name string) error {
	d, err := e.Registry.Config().IsDisabled(ctx, "workflow", name)
	if err != nil {
		return fmt.Errorf("workflow engine: read disable flag of %s: %w", name, err)
	}
	was := e.disabled[name]
	e.disabled[name] = d
	if sch, _ := e.defs[name].Schedule(); was && !d && sch != nil {
		// fires while disabled are not made, now or by a later leader
		if err := e.markFired(ctx, name, e.Clock.Now()); err != nil {
			return err
		}
	}
	e.schedule(name, time.Time{})
	e.markWorkflow(name)
	return nil
}

// markWorkflow marks every active run of a workflow dirty.
func (e *Engine) markWorkflow(name string) {
	for id := range e.active[name] {
		e.dirty[runRef{name, id}] = true
	}
}
