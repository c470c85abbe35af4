package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

// retryPause is how long a run whose commit lost a race waits before it
// is read and decided again.
const retryPause = 5 * time.Millisecond

// processDirty decides every dirty run, oldest first (so queued runs are
// begun in order), until none is left.
func (e *Engine) processDirty(ctx context.Context) error {
	for range 100 {
		if len(e.dirty) == 0 {
			return nil
		}
		refs := make([]runRef, 0, len(e.dirty))
		for ref := range e.dirty {
			refs = append(refs, ref)
		}
		clear(e.dirty)
		sort.Slice(refs, func(i, j int) bool { return e.before(refs[i], refs[j]) })
		for _, ref := range refs {
			if err := e.process(ctx, ref); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *Engine) before(a, b runRef) bool {
	ta, tb := e.active[a.wf][a.id], e.active[b.wf][b.id]
	if ta != nil && tb != nil && !ta.created.Equal(tb.created) {
		return ta.created.Before(tb.created)
	}
	if a.wf != b.wf {
		return a.wf < b.wf
	}
	return a.id < b.id
}

// process reads a run, decides with workflow.Step, commits the decision
// (with the node executions it queues) behind the fence, then kills what
// it must and tells the observer. A commit that loses a race is redone
// shortly; a fenced one ends the engine.
func (e *Engine) process(ctx context.Context, ref runRef) error {
	run, err := e.Registry.WorkflowRun(ctx, ref.wf, ref.id)
	if errors.Is(err, workflow.ErrRunNotFound) {
		e.forget(ref)
		return nil
	}
	if err != nil {
		e.Log.Warn("workflow engine: read run", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return nil
	}
	if run.State.Final() {
		e.forget(ref)
		return nil
	}
	e.track(run)
	if _, ok := e.defs[ref.wf]; !ok && run.Cancel == nil {
		run.Cancel = &workflow.Cancel{At: e.Clock.Now().UTC(), Reason: "the workflow was deleted"}
	}
	now := e.Clock.Now()
	begin := run.State == workflow.RunQueued && run.Cancel == nil && e.mayBegin(ref)
	ex, err := e.executions(ctx, run)
	if err != nil {
		e.Log.Warn("workflow engine: read node executions", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return nil
	}
	next, acts := workflow.Step(run, begin, workflow.Input{Now: now, Executions: ex, CanStart: e.canStart(ctx)})
	changed := !reflect.DeepEqual(next, run)
	drops, err := e.dropOps(ctx, acts)
	if err != nil {
		e.Log.Warn("workflow engine: read queues", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return nil
	}
	if changed || len(drops) > 0 {
		var ops []store.Op
		if changed {
			ops, err = e.ops(ctx, run, next, acts, now)
		}
		if err == nil {
			err = e.Registry.Commit(ctx, append(ops, drops...)...)
		}
		if errors.Is(err, registry.ErrFenced) {
			return fmt.Errorf("workflow engine: %w", err)
		}
		if err != nil {
			if !isRace(err) {
				e.Log.Warn("workflow engine: commit run; trying again in a second", "workflow", ref.wf, "run", ref.id, "err", err)
				e.laterBy(ref, time.Second)
				return nil
			}
			e.later(ref)
			return nil
		}
		if !changed {
			e.dirty[ref] = true // its dropped executions end its nodes
		} else {
			next.Version = run.Version + 1
			e.track(next)
			for i, n := range run.Nodes {
				if next.Nodes[i].State != n.State {
					delete(e.lost, n.RunKey)
					delete(e.suspects, n.RunKey)
				}
			}
		}
	}
	e.kill(ctx, next, acts)
	if changed {
		if e.Observer != nil {
			e.Observer.RunChanged(run, next)
		}
		if next.State != run.State {
			e.markWorkflow(ref.wf) // a slot was taken or freed
		}
		if next.State.Final() {
			e.forget(ref)
		}
	}
	return nil
}

func isRace(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists)
}

// later redoes a run after retryPause.
func (e *Engine) later(ref runRef) { e.laterBy(ref, retryPause) }

// laterBy redoes a run after d (or sooner, with other retries).
func (e *Engine) laterBy(ref runRef, d time.Duration) {
	e.retry[ref] = true
	if at := e.Clock.Now().Add(d); e.retryAt.IsZero() || at.Before(e.retryAt) {
		e.retryAt = at
	}
}

// executions reads what is known of the run's RUNNING nodes: an ended
// execution from its record, and a lost one as the sweep found it (at once
// when the run is being cancelled: the engine dropped it itself).
func (e *Engine) executions(ctx context.Context, run workflow.Run) (map[string]workflow.Execution, error) {
	out := map[string]workflow.Execution{}
	var where *keySets
	for _, n := range run.Nodes {
		if n.State != workflow.NodeRunning {
			continue
		}
		rec, err := e.Registry.RunRecordOf(ctx, n.RunKey)
		if err != nil && !errors.Is(err, registry.ErrRunNotFound) {
			return nil, err
		}
		if err == nil && rec.Done {
			out[n.ID] = workflow.Execution{Done: true, Success: rec.Success, Shards: shardsOf(rec)}
			continue
		}
		if why, ok := e.lost[n.RunKey]; ok {
			out[n.ID] = workflow.Execution{Lost: why}
			continue
		}
		if run.Cancel == nil {
			continue
		}
		if where == nil {
			if where, err = e.keySets(ctx); err != nil {
				return nil, err
			}
		}
		if where.pending[n.RunKey] || where.active[n.RunKey] {
			continue
		}
		// it may have ended between the two reads
		if rec, err := e.Registry.RunRecordOf(ctx, n.RunKey); err == nil && rec.Done {
			out[n.ID] = workflow.Execution{Done: true, Success: rec.Success, Shards: shardsOf(rec)}
		} else {
			out[n.ID] = workflow.Execution{Lost: "its execution was dropped"}
		}
	}
	return out, nil
}

func shardsOf(rec registry.RunRecord) []workflow.Shard {
	out := make([]workflow.Shard, 0, len(rec.Shards))
	for _, s := range rec.Shards {
		out = append(out, workflow.Shard{Item: s.Item, TaskID: s.TaskID, State: s.State, Message: s.Message,
			StartedAt: s.StartedAt, EndedAt: s.EndedAt, Outputs: s.Outputs})
	}
	return out
}

// keySets are the keys of pending executions and of running tasks and
// shards waiting for a retry or failover.
type keySets struct{ pending, active map[string]bool }

func (e *Engine) keySets(ctx context.Context) (*keySets, error) {
	p, err := e.Registry.PendingKeys(ctx)
	if err != nil {
		return nil, err
	}
	a, err := e.Registry.ActiveKeys(ctx)
	if err != nil {
		return nil, err
	}
	return &keySets{p, a}, nil
}

// canStart says why a node's job cannot take an execution now.
func (e *Engine) canStart(ctx context.Context) func(string) error {
	return func(name string) error {
		j, err := e.Registry.Job(ctx, name)
		if errors.Is(err, registry.ErrJobNotFound) {
			return fmt.Errorf("job '%s' no longer exists", name)
		}
		if err != nil {
			return fmt.Errorf("job '%s' could not be read: %v", name, err)
		}
		if j.JobExecutionType != jobs.Transient {
			return fmt.Errorf("job '%s' is a DAEMON job now", name)
		}
		if max := e.Registry.MaxPending; max > 0 {
			if rd, ok, err := e.Registry.ReadyOf(ctx, name); err == nil && ok && rd.Count >= max {
				return fmt.Errorf("job '%s' already has %d pending executions (job_state_queue_size)", name, rd.Count)
			}
		}
		for _, c := range []struct{ kind, name string }{{"job", name}, {"app", j.AppName}} {
			if c.name == "" {
				continue
			}
			if d, err := e.Registry.IsDisabled(ctx, c.kind, c.name); err != nil || d {
				if err != nil {
					return fmt.Errorf("the %s '%s' could not be read: %v", c.kind, c.name, err)
				}
				return fmt.Errorf("the %s '%s' is disabled", c.kind, c.name)
			}
		}
		return nil
	}
}

// ops are the writes of one decision: the run (compare-and-set), the
// executions it queues (their records and their jobs' ready entries),
// the records of nodes it ended (copied into the run), and for a cancel
// the queued executions and waiting retries of the nodes to kill.
func (e *Engine) ops(ctx context.Context, run, next workflow.Run, acts []workflow.Action, now time.Time) ([]store.Op, error) {
	ops := []store.Op{registry.PutWorkflowRunOp(next)}
	starts := map[string][]registry.NodeStart{}
	var jobNames []string
	for _, a := range acts {
		switch a.Kind {
		case workflow.Start:
			param, err := e.parameter(ctx, a)
			if err != nil {
				return nil, err
			}
			if _, ok := starts[a.Job]; !ok {
				jobNames = append(jobNames, a.Job)
			}
			starts[a.Job] = append(starts[a.Job], registry.NodeStart{Key: a.Key, Owner: run.Workflow + "/" + run.ID + "/" + a.Node,
				Parameter: param, Inputs: a.Inputs})
		}
	}
	for _, job := range jobNames {
		q, err := e.Registry.QueueNodeOps(ctx, job, starts[job], now)
		if err != nil {
			return nil, err
		}
		ops = append(ops, q...)
	}
	for i, n := range run.Nodes {
		if n.State == workflow.NodeRunning && next.Nodes[i].State.Final() {
			ops = append(ops, registry.DeleteRunRecordOp(n.RunKey))
		}
	}
	return ops, nil
}

// parameter is a node's jobParameter: its own or the run's, else the
// job's own (a keyed execution always carries one).
func (e *Engine) parameter(ctx context.Context, a workflow.Action) (string, error) {
	if a.Parameter != nil {
		return *a.Parameter, nil
	}
	j, err := e.Registry.Job(ctx, a.Job)
	if err != nil {
		return "", err
	}
	return j.JobParameter, nil
}

// dropOps remove the executions of the nodes a cancel ends that are not
// running: pending runs in their jobs' ready entries and shards waiting
// for a retry.
func (e *Engine) dropOps(ctx context.Context, acts []workflow.Action) ([]store.Op, error) {
	var ops []store.Op
	var fo []registry.Failover
	for _, a := range acts {
		if a.Kind != workflow.Kill {
			continue
		}
		op, ok, err := e.Registry.DropPendingRunOp(ctx, a.Job, a.Key)
		if err != nil {
			return nil, err
		}
		if ok {
			ops = append(ops, op)
		}
		if fo == nil {
			if fo, err = e.Registry.FailoverQueue(ctx); err != nil {
				return nil, err
			}
		}
		for _, f := range fo {
			if f.Job == a.Job && f.RunKey == a.Key {
				ops = append(ops, store.Delete(registry.FailoverPathOf(f.Job, f.Item), f.Version))
			}
		}
	}
	return ops, nil
}

// killAgain is how soon a task killed for a cancel is killed again if it
// still runs (the first kill may have raced its launch).
const killAgain = 5 * time.Second

// kill kills the running tasks of the nodes a cancel ends.
func (e *Engine) kill(ctx context.Context, run workflow.Run, acts []workflow.Action) {
	now := e.Clock.Now()
	for _, a := range acts {
		if a.Kind != workflow.Kill {
			continue
		}
		running, err := e.Registry.RunningOf(ctx, a.Job)
		if err != nil {
			e.Log.Warn("workflow engine: read running tasks", "job", a.Job, "err", err)
			continue
		}
		for _, rt := range running {
			if rt.RunKey != a.Key || (now.Sub(e.killed[rt.TaskID]) < killAgain) {
				continue
			}
			e.killed[rt.TaskID] = now
			if e.Killer == nil {
				continue
			}
			e.Log.Info("workflow engine: killing a cancelled node's task", "workflow", run.Workflow, "run", run.ID, "node", a.Node, "task", rt.TaskID)
			if err := e.Killer.Kill(ctx, rt.TaskID, rt.AgentID); err != nil {
				e.Log.Warn("workflow engine: kill", "task", rt.TaskID, "err", err)
			}
		}
	}
}
