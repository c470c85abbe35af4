package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// ErrBadReport is returned for a report that names no task or an unknown state.
var ErrBadReport = errors.New("kube: bad executor report")

// Report takes a report of the executor in one of this scheduler's pods (checked by the
// API: the task's token): a status update goes to the scheduler as its task's state (the
// pod's phase is the fallback when none comes), a message (a daemon run's BEGIN or
// COMPLETE) as Handler.Message.
func (e *Engine) Report(_ context.Context, r engine.ExecutorReport) error {
	tid, err := jobs.ParseTaskID(r.TaskID)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	if r.State != "" && r.State != tstate.Running && r.State != tstate.Starting && !r.State.Terminal() {
		return fmt.Errorf("%w: state %q", ErrBadReport, r.State)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.subscribed {
		return ErrNotRunning
	}
	if e.finished.Has(r.TaskID) {
		return nil // its end is committed and its pod gone: a late duplicate
	}
	t := e.tasks[r.TaskID]
	if t == nil { // the informer has not shown its pod yet
		t = &task{id: r.TaskID, node: r.AgentID, execID: r.ExecutorID, pod: podName(tid.JobName, tid.Item, r.TaskID)}
		e.tasks[r.TaskID] = t
	}
	if r.State == "" {
		node, execID, data := firstOf(t.node, r.AgentID), firstOf(t.execID, r.ExecutorID), r.Data
		e.post(func(ctx context.Context, h engine.Handler) { h.Message(ctx, node, execID, data) })
		e.wake()
		return nil
	}
	rep := r
	switch {
	case r.State.Terminal():
		if t.final == nil {
			t.final = &rep
		}
	case r.State == tstate.Running && t.running == nil:
		t.running = &rep
	}
	t.dirty = true
	e.wake()
	return nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
