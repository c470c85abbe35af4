package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

// Workflow paths (SPEC §3):
//
//	/config/workflow/{name}                  workflow.Config (JSON)
//	/state/workflow/{name}                   WorkflowState (JSON); its children are the runs
//	/state/workflow/{name}/{runId}           workflow.Run (JSON)
//	/state/workflow_keys/{name}/{key}        the run a trigger's idempotency key created
//	/state/disable/workflow/{name}           present = disabled
const (
	WorkflowsPath        = "/config/workflow"
	WorkflowRunsPath     = "/state/workflow"
	workflowKeysPath     = "/state/workflow_keys"
	disabledWorkflowPath = "/state/disable/workflow"
)

// WorkflowState is the value of /state/workflow/{name}: the leader's
// bookkeeping of the workflow's cron.
type WorkflowState struct {
	// FiredUntil: every cron fire scheduled at or before it has been
	// turned into a run (or collapsed by the misfire rule). A new leader
	// replays the fires after it.
	FiredUntil time.Time `json:"firedUntil,omitzero"`
}

// WorkflowKey is the value of a trigger's idempotency key.
type WorkflowKey struct {
	RunID string    `json:"runId"`
	At    time.Time `json:"at"`
}

func workflowPath(name string) string     { return WorkflowsPath + "/" + name }
func workflowRunsPath(name string) string { return WorkflowRunsPath + "/" + name }

// workflowRunPath is the node of one run.
func workflowRunPath(name, runID string) string { return WorkflowRunsPath + "/" + name + "/" + runID }

func workflowNotFound(name string) error {
	return fmt.Errorf("%w: Cannot find workflow '%s', please register first.", workflow.ErrNotFound, name)
}

// AddWorkflow registers a new workflow.
func (fl Flows) AddWorkflow(ctx context.Context, c workflow.Config) error {
	err := fl.r.commit(ctx, createJSON(workflowPath(c.Name), c))
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: Workflow '%s' already existed.", workflow.ErrExists, c.Name)
	}
	return err
}

// UpdateWorkflow replaces an existing workflow's config. Runs in flight go
// on with the definition they started with.
func (fl Flows) UpdateWorkflow(ctx context.Context, c workflow.Config) error {
	err := fl.r.commit(ctx, setJSON(workflowPath(c.Name), c, store.AnyVersion))
	if errors.Is(err, store.ErrNotFound) {
		return workflowNotFound(c.Name)
	}
	return err
}

// Workflow returns one workflow.
func (fl Flows) Workflow(ctx context.Context, name string) (workflow.Config, error) {
	var c workflow.Config
	n, err := fl.r.kv.Get(ctx, workflowPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return c, workflowNotFound(name)
	}
	if err != nil {
		return c, err
	}
	if err := decodeAt(n.Path, n.Value, &c); err != nil {
		return c, err
	}
	return c, nil
}

// Workflows lists every workflow, sorted by name.
func (fl Flows) Workflows(ctx context.Context) ([]workflow.Config, error) {
	return listJSON[workflow.Config](ctx, fl.r, WorkflowsPath)
}

// WorkflowUses lists the workflows whose nodes run any of jobs (sorted by
// name): deleting those jobs, or their app, would fail their next runs.
func (fl Flows) WorkflowUses(ctx context.Context, jobs ...string) ([]workflow.Use, error) {
	all, err := fl.Workflows(ctx)
	if err != nil {
		return nil, err
	}
	return workflow.Uses(all, jobs...), nil
}

// DeleteWorkflow removes a workflow, its disable flag and idempotency
// keys, and asks the leader to cancel its active runs, in one commit. The
// leader removes the runs once none is active any more (unless the name
// was registered again meanwhile).
func (fl Flows) DeleteWorkflow(ctx context.Context, name string, now time.Time) error {
	for range maxCASRetries {
		if _, err := fl.Workflow(ctx, name); err != nil {
			return err
		}
		runs, err := fl.WorkflowRuns(ctx, name)
		if err != nil {
			return err
		}
		ops := []store.Op{store.Delete(workflowPath(name), store.AnyVersion), store.Delete(disabledWorkflowPath+"/"+name, store.AnyVersion),
			store.Delete(workflowKeysPath+"/"+name, store.AnyVersion)}
		for _, run := range runs {
			if run.Active() && run.Cancel == nil {
				run, _ = workflow.RequestCancel(run, "the workflow was deleted", now)
				ops = append(ops, putWorkflowRunOp(run))
			}
		}
		err = fl.r.commit(ctx, ops...)
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("%w: the runs of workflow '%s' kept changing while it was deleted", ErrConflict, name)
}

// WorkflowStateOf reads a workflow's bookkeeping (zero when none).
func (fl Flows) WorkflowStateOf(ctx context.Context, name string) (WorkflowState, error) {
	var st WorkflowState
	n, err := fl.r.kv.Get(ctx, workflowRunsPath(name))
	if errors.Is(err, store.ErrNotFound) || (err == nil && len(n.Value) == 0) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := decodeAt(n.Path, n.Value, &st); err != nil {
		// set aside and read as none: the engine writes a new watermark
		// (the fires it would have replayed are not)
		fl.r.setAside(n, err)
		return WorkflowState{}, nil
	}
	return st, nil
}

// putWorkflowStateOp writes a workflow's bookkeeping.
func putWorkflowStateOp(name string, st WorkflowState) store.Op {
	return putJSON(workflowRunsPath(name), st)
}

// WorkflowRuns lists a workflow's runs (in the registry), oldest first.
func (fl Flows) WorkflowRuns(ctx context.Context, name string) ([]workflow.Run, error) {
	nodes, err := fl.r.kv.List(ctx, workflowRunsPath(name))
	if err != nil {
		return nil, err
	}
	out := make([]workflow.Run, 0, len(nodes))
	for _, n := range nodes {
		run, err := decodeRun(n)
		if fl.r.setAside(n, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// WorkflowRunNames lists the workflows that have run state (possibly of a
// workflow deleted since).
func (fl Flows) WorkflowRunNames(ctx context.Context) ([]string, error) {
	return fl.r.kv.Children(ctx, WorkflowRunsPath)
}

// WorkflowRun reads one run.
func (fl Flows) WorkflowRun(ctx context.Context, name, runID string) (workflow.Run, error) {
	n, err := fl.r.kv.Get(ctx, workflowRunPath(name, runID))
	if errors.Is(err, store.ErrNotFound) {
		return workflow.Run{}, fmt.Errorf("%w: workflow '%s' has no run '%s'", workflow.ErrRunNotFound, name, runID)
	}
	if err != nil {
		return workflow.Run{}, err
	}
	return decodeRun(n)
}

func decodeRun(n store.Node) (workflow.Run, error) {
	var run workflow.Run
	if err := decodeAt(n.Path, n.Value, &run); err != nil {
		return run, err
	}
	run.Version = n.Version
	return run, nil
}

// putWorkflowRunOp writes a run read at run.Version (compare-and-set).
func putWorkflowRunOp(run workflow.Run) store.Op {
	return setJSON(workflowRunPath(run.Workflow, run.ID), run, run.Version)
}

// createWorkflowRunOp creates a new run.
func createWorkflowRunOp(run workflow.Run) store.Op {
	return createJSON(workflowRunPath(run.Workflow, run.ID), run)
}

// UpdateWorkflowRun rewrites a run with f, compare-and-set, again while it
// changes under it; f's error is returned as it is.
func (fl Flows) UpdateWorkflowRun(ctx context.Context, name, runID string, f func(workflow.Run) (workflow.Run, error)) (workflow.Run, error) {
	for range maxCASRetries {
		run, err := fl.WorkflowRun(ctx, name, runID)
		if err != nil {
			return run, err
		}
		next, err := f(run)
		if err != nil {
			return run, err
		}
		err = fl.r.commit(ctx, putWorkflowRunOp(next))
		if err == nil {
			next.Version = run.Version + 1
			return next, nil
		}
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return run, err
		}
	}
	return workflow.Run{}, fmt.Errorf("%w: run '%s' of workflow '%s' kept changing", ErrConflict, runID, name)
}

// CreateWorkflowRun stores a new QUEUED run. With an idempotency key seen
// before (within the keys' lifetime) it creates nothing and returns the
// run that key created, with duplicate set. maxQueued > 0 refuses a run
// when the workflow already has that many QUEUED runs.
func (fl Flows) CreateWorkflowRun(ctx context.Context, run workflow.Run, maxQueued int) (string, bool, error) {
	for range maxCASRetries {
		var ops []store.Op
		if k := run.IdempotencyKey; k != "" {
			kp := workflowKeysPath + "/" + run.Workflow + "/" + k
			n, err := fl.r.kv.Get(ctx, kp)
			if err == nil {
				var wk WorkflowKey
				if err := decodeAt(n.Path, n.Value, &wk); err != nil {
					return "", false, err
				}
				return wk.RunID, true, nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return "", false, err
			}
			ops = append(ops, createJSON(kp, WorkflowKey{RunID: run.ID, At: run.CreatedAt}))
		}
		if err := fl.r.checkQueued(ctx, run.Workflow, maxQueued); err != nil {
			return "", false, err
		}
		wf, err := fl.r.kv.Get(ctx, workflowPath(run.Workflow))
		if errors.Is(err, store.ErrNotFound) {
			return "", false, workflowNotFound(run.Workflow)
		}
		if err != nil {
			return "", false, err
		}
		ops = append(ops, store.Check(wf.Path, wf.Version), createWorkflowRunOp(run))
		err = fl.r.commit(ctx, ops...)
		if err == nil || !(errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)) {
			return run.ID, false, err
		}
	}
	return "", false, fmt.Errorf("%w: workflow '%s' kept changing while a run was created", ErrConflict, run.Workflow)
}

func (r *Registry) checkQueued(ctx context.Context, name string, maxQueued int) error {
	if maxQueued <= 0 {
		return nil
	}
	runs, err := r.Flows().WorkflowRuns(ctx, name)
	if err != nil {
		return err
	}
	queued := 0
	for _, run := range runs {
		if run.State == workflow.RunQueued {
			queued++
		}
	}
	if queued >= maxQueued {
		return fmt.Errorf("%w: workflow '%s' already has %d queued runs", workflow.ErrTooManyQueued, name, queued)
	}
	return nil
}

// StoredWorkflows lists every workflow's stored configuration undecoded,
// sorted by path (Stored.Key is the workflow's key).
func (fl Flows) StoredWorkflows(ctx context.Context) ([]Stored, error) {
	nodes, err := fl.r.kv.List(ctx, WorkflowsPath)
	return storedAll(fl.r, nodes), err
}
