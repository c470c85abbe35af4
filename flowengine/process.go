package flowengine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
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
	stored, ok := e.read(ctx, ref)
	if !ok {
		return nil
	}
	d, err := e.decide(ctx, ref, stored)
	if err != nil {
		e.Log.Warn("workflow engine: read the run's nodes and queues; trying again in a second", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return nil
	}
	if d.changed || d.drops.Len() > 0 {
		committed, err := e.commit(ctx, ref, stored, d)
		if err != nil || !committed {
			return err
		}
	}
	e.kill(ctx, d.next, d.acts)
	if d.changed {
		e.after(ref, stored, d.next)
	}
	return nil
}

// read reads an active run (false: there is none to decide).
func (e *Engine) read(ctx context.Context, ref runRef) (workflow.Run, bool) {
	run, err := e.Registry.Flows().WorkflowRun(ctx, ref.wf, ref.id)
	if errors.Is(err, workflow.ErrRunNotFound) {
		e.forget(ref)
		return run, false
	}
	if isUnreadable(err) {
		e.Log.Error("workflow engine: a run cannot be read; it is left alone", "workflow", ref.wf, "run", ref.id, "err", err)
		e.forget(ref)
		return run, false
	}
	if err != nil {
		e.Log.Warn("workflow engine: read run", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return run, false
	}
	if run.State.Final() {
		e.forget(ref)
		return run, false
	}
	e.track(run)
	return run, true
}

// decision is what one look at a run decided.
type decision struct {
	next    workflow.Run
	acts    []workflow.Action
	changed bool             // next differs from the stored run
	drops   *registry.Change // executions a cancel drops from their queues
	now     time.Time
}

func (e *Engine) decide(ctx context.Context, ref runRef, stored workflow.Run) (decision, error) {
	run := stored
	if _, ok := e.defs[ref.wf]; !ok && run.Cancel == nil {
		run.Cancel = &workflow.Cancel{At: e.Clock.Now().UTC(), Reason: "the workflow was deleted"}
	}
	d := decision{now: e.Clock.Now()}
	begin := run.State == workflow.RunQueued && run.Cancel == nil && e.mayBegin(ref)
	in, err := e.stepInput(ctx, run, d.now)
	if err != nil {
		return d, err
	}
	d.next, d.acts = workflow.Step(run, begin, in)
	d.changed = !reflect.DeepEqual(d.next, stored)
	d.drops, err = e.dropOps(ctx, d.acts)
	return d, err
}

// commit writes a decision; it reports whether it committed, and returns
// an error only when the term is over (a fenced write).
func (e *Engine) commit(ctx context.Context, ref runRef, stored workflow.Run, d decision) (bool, error) {
	ch := e.Registry.Change()
	var err error
	if d.changed {
		err = e.ops(ctx, ch, stored, d.next, d.acts, d.now)
	}
	if err == nil {
		err = ch.Merge(d.drops).Commit(ctx)
	}
	switch {
	case errors.Is(err, registry.ErrFenced):
		return false, fmt.Errorf("workflow engine: %w", err)
	case err != nil && isRace(err):
		e.laterBy(ref, retryPause)
		return false, nil
	case err != nil:
		e.Log.Warn("workflow engine: commit run; trying again in a second", "workflow", ref.wf, "run", ref.id, "err", err)
		e.laterBy(ref, time.Second)
		return false, nil
	}
	if !d.changed {
		e.dirty[ref] = true // its dropped executions end its nodes
	}
	return true, nil
}

// after follows a committed change: the engine's memory, the observer,
// and the queued runs of the workflow when a slot was taken or freed.
func (e *Engine) after(ref runRef, stored, next workflow.Run) {
	next.Version = stored.Version + 1
	e.track(next)
	for i, n := range stored.Nodes {
		if next.Nodes[i].State != n.State {
			delete(e.lost, n.RunKey)
			delete(e.suspects, n.RunKey)
		}
	}
	if e.Observer != nil {
		e.Observer.RunChanged(stored, next)
	}
	if next.State != stored.State {
		e.markWorkflow(ref.wf)
	}
	if next.State.Final() {
		e.forget(ref)
	}
}

func isRace(err error) bool { return errors.Is(err, registry.ErrConflict) }

// laterBy redoes a run after d (or sooner, with other retries).
func (e *Engine) laterBy(ref runRef, d time.Duration) {
	e.retry[ref] = true
	if at := e.Clock.Now().Add(d); e.retryAt.IsZero() || at.Before(e.retryAt) {
		e.retryAt = at
	}
}

// ops are the writes of one decision: the run (compare-and-set), the
// executions it queues (their records and their jobs' ready entries),
// the records of nodes it ended (copied into the run), and for a cancel
// the queued executions and waiting retries of the nodes to kill.
func (e *Engine) ops(ctx context.Context, ch *registry.Change, run, next workflow.Run, acts []workflow.Action, now time.Time) error {
	ch.PutWorkflowRun(next)
	starts := map[string][]registry.NodeStart{}
	var jobNames []string
	for _, a := range acts {
		switch a.Kind {
		case workflow.Start:
			param, err := parameter(ctx, e.Registry, a)
			if err != nil {
				return err
			}
			if _, ok := starts[a.Job]; !ok {
				jobNames = append(jobNames, a.Job)
			}
			starts[a.Job] = append(starts[a.Job], registry.NodeStart{Key: a.Key, Owner: run.Workflow + "/" + run.ID + "/" + a.Node,
				Parameter: param, Inputs: a.Inputs, ScheduledAt: run.ScheduledAt})
		}
	}
	for _, job := range jobNames {
		if err := ch.QueueNodes(ctx, job, starts[job], now); err != nil {
			return err
		}
	}
	for i, n := range run.Nodes {
		if n.State == workflow.NodeRunning && next.Nodes[i].State.Final() {
			ch.DropRunRecord(n.RunKey)
		}
	}
	return nil
}

// parameter is a node's jobParameter: its own or the run's, else the
// job's own (a keyed execution always carries one).
func parameter(ctx context.Context, reg *registry.Registry, a workflow.Action) (string, error) {
	if a.Parameter != nil {
		return *a.Parameter, nil
	}
	j, err := reg.Config().Job(ctx, a.Job)
	if err != nil {
		return "", err
	}
	return j.JobParameter, nil
}

// dropOps remove the executions of the nodes a cancel ends that are not
// running: pending runs in their jobs' ready entries and shards waiting
// for a retry.
func (e *Engine) dropOps(ctx context.Context, acts []workflow.Action) (*registry.Change, error) {
	ch := e.Registry.Change()
	var fo []queue.Failover
	for _, a := range acts {
		if a.Kind != workflow.Kill {
			continue
		}
		if err := ch.DropPendingRun(ctx, a.Job, a.Key); err != nil {
			return nil, err
		}
		if fo == nil {
			var err error
			if fo, err = e.Registry.Work().FailoverQueue(ctx); err != nil {
				return nil, err
			}
		}
		for _, f := range fo {
			if f.Job == a.Job && f.RunKey == a.Key {
				ch.TakeFailover(f)
			}
		}
	}
	return ch, nil
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
		running, err := e.Registry.Work().RunningOf(ctx, a.Job)
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
