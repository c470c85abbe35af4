package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/internal/recent"
	tstate "github.com/ejcloud/elasticjob/task"
)

// task is one of this scheduler's tasks: its pod as last seen, what its executor reported,
// and what the scheduler has been told.
type task struct {
	id, pod, node, execID string
	ns                    string // the Kubernetes namespace of its pod
	share                 res    // its part of its app executor's resources (in req)
	memMB                 int64
	images                map[string]string // container → image
	obj                   *corev1.Pod       // the pod as the informer last showed it (nil: not yet)
	created               bool              // created by this engine and not yet shown by the informer
	unsure                bool              // its creation's answer was lost: its pod may or may not exist (unseen.go)
	absent                bool              // never shown by the informer, and the API server says its pod is not there
	probeAt               time.Time         // when the API server is asked whether its unseen pod exists (zero: not due)
	probeGap              time.Duration     // the wait before asking again after a failed ask
	req                   res               // its requests while created
	running               *engine.ExecutorReport
	final                 *engine.ExecutorReport
	dropped               *phaseStatus   // the API server refused the pod
	ended                 *engine.Status // the end it had before it was launched again (adopt)
	endTold               *engine.Status // the terminal update the scheduler took
	event                 *phaseStatus   // a Warning event that ends the task (its image, an admission rejection)
	waiting               string         // why its pod waits, by the last Warning event about it
	waitSent              string         // the wait reason the scheduler was last told
	sent                  tstate.State   // the last state the scheduler was told
	killing               bool           // Kill asked for it
	deleted               bool           // the pod is gone
	nodeLost              bool           // its node left the cluster (nodegc.go)
	gcAt                  time.Time      // when its pod is deleted if its node is still gone (zero: not due)
	committed             bool           // the scheduler committed its end: the pod may go
	committedAt           time.Time      // when (its pod is held at most FinishedPodHold from then)
	dirty                 bool
	retryAt               time.Time // re-send a terminal update the scheduler did not take
}

// taskTable is this scheduler's tasks by task id: the launch decisions' state with the
// nodes and the offers, guarded by the Engine's lock.
type taskTable map[string]*task

// seen records the informer's view of one of our pods (a pod found at start is adopted;
// one of a task in finished is not brought back).
func (tt taskTable) seen(id string, p *corev1.Pod, finished *recent.Set) {
	if finished.Has(id) {
		return
	}
	t := tt[id]
	if t == nil {
		t = &task{id: id}
		tt[id] = t
	}
	t.obj, t.created, t.pod, t.node, t.ns = p, false, p.Name, podNode(p), p.Namespace
	t.execID, t.memMB, t.share = p.Annotations[AnnotationExec], podMemMB(p), parseShare(p.Annotations[AnnotationShare])
	if t.images == nil {
		t.images = imagesOf(&p.Spec)
	}
	t.dirty = true
}

// gone records that one of our pods was deleted (a task whose end was committed is
// forgotten, into finished).
func (tt taskTable) gone(id string, p *corev1.Pod, finished *recent.Set, ends *endMemory) {
	t := tt[id]
	if t == nil {
		return
	}
	if t.committed { // deleted after its end was committed: done with it
		if t.endTold != nil {
			ends.put(*t.endTold)
		}
		delete(tt, id)
		finished.Add(id)
		return
	}
	t.obj, t.deleted, t.dirty = p, true, true
}

// updatesOf returns the status updates that bring the scheduler up to date with t (a
// RUNNING before a terminal one when the executor reported both). Called with e.mu held.
func (e *Engine) updatesOf(t *task, now time.Time) []call {
	t.dirty = false
	if !t.retryAt.IsZero() {
		if now.Before(t.retryAt) {
			return nil
		}
		t.retryAt = time.Time{}
	}
	var out []call
	st, ok := t.derive(e.clock.Now())
	if !ok || rank(st.State) <= rank(t.sent) {
		return t.waitNote(e.clock.Now())
	}
	if st.State.Terminal() && t.running != nil && rank(t.sent) < rank(tstate.Running) {
		out = append(out, e.send(t, t.statusOf(t.running, e.clock.Now())))
	}
	if st.State.Terminal() && st.State != tstate.Finished && st.Source != tstate.SourceExecutor && st.Reason != tstate.ReasonContainerLaunchFailed && t.running == nil && t.waiting != "" {
		st.Message += "; before, " + t.waiting // the pod never ran: why it waited is the cause
	}
	return append(out, e.send(t, st))
}

// waitNote tells the scheduler why a task's pod waits (a TASK_STAGING update with the
// reason: a status trace), once per new reason, while the task has not started.
func (t *task) waitNote(now time.Time) []call {
	if t.waiting == "" || t.waiting == t.waitSent || rank(t.sent) > rank(tstate.Staging) {
		return nil
	}
	t.waitSent = t.waiting
	st := engine.Status{TaskID: t.id, AgentID: t.node, ExecutorID: t.execID, State: tstate.Staging, Source: tstate.SourceAgent,
		Message: "waiting: " + t.waiting, Timestamp: now}
	return []call{func(ctx context.Context, h engine.Handler) { h.UpdateAsync(ctx, st, func(bool) {}) }}
}

// send marks st as told and returns the call that tells it.
func (e *Engine) send(t *task, st engine.Status) call {
	prev := t.sent
	t.sent = st.State
	id := t.id
	return func(ctx context.Context, h engine.Handler) {
		h.UpdateAsync(ctx, st, func(handled bool) { e.handled(id, st, prev, handled) })
	}
}

// handled is the scheduler's answer to an update: a terminal one it committed lets the
// pod go (its log tail kept first); one it could not commit is sent again in a second.
func (e *Engine) handled(id string, st engine.Status, prev tstate.State, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tasks[id]
	if t == nil {
		return
	}
	if !ok {
		if t.sent == st.State {
			t.sent, t.retryAt = prev, e.clock.Now().Add(time.Second)
			e.wake()
		}
		return
	}
	if st.State.Terminal() && !t.committed {
		t.committed, t.committedAt, t.endTold = true, e.clock.Now(), &st
		if e.held == nil { // its pod is held for release (release.go)
			e.held = map[string]struct{}{}
		}
		e.held[t.id] = struct{}{}
		e.wake()
	}
}

// statusOf is the update of an executor's report.
func (t *task) statusOf(r *engine.ExecutorReport, now time.Time) engine.Status {
	return engine.Status{TaskID: t.id, AgentID: t.node, ExecutorID: t.execID, State: r.State, Message: r.Message,
		Source: tstate.SourceExecutor, Data: r.Data, Timestamp: now}
}

// derive is the task's state by what is known: the executor's report first, the pod's
// phase as the fallback, the pod's or node's loss last (a pure decision on the task).
func (t *task) derive(now time.Time) (engine.Status, bool) {
	st := engine.Status{TaskID: t.id, AgentID: t.node, ExecutorID: t.execID, Timestamp: now}
	set := func(ps phaseStatus) (engine.Status, bool) {
		st.State, st.Message, st.Reason, st.Source = ps.state, ps.message, ps.reason, ps.source
		return st, true
	}
	if t.dropped != nil {
		return set(*t.dropped)
	}
	if t.ended != nil {
		st = *t.ended
		st.Timestamp = now
		return st, true
	}
	if r := t.final; r != nil {
		if r.State == tstate.Killed && !t.killing {
			return set(t.stoppedFromOutside())
		}
		return t.statusOf(r, now), true
	}
	if t.killing && t.obj != nil && podTerminal(t.obj) && t.obj.Status.Phase != corev1.PodSucceeded {
		// Killed, and its executor's report did not come (the pod's end, by SIGTERM or the
		// grace period's SIGKILL, is the kill's own).
		return set(phaseStatus{state: tstate.Killed, source: tstate.SourceAgent, message: "killed: its pod was deleted"})
	}
	if t.obj != nil {
		if ps, ok := statusOfPod(t.obj, t.memMB); ok && (ps.state.Terminal() || !t.deleted) {
			if ps.state == tstate.Running && t.running != nil {
				return t.statusOf(t.running, now), true
			}
			return set(ps)
		}
	}
	if t.event != nil && !t.deleted {
		return set(*t.event)
	}
	switch {
	case t.nodeLost && t.deleted: // its pod gone after its node (nodegc.go)
		return set(phaseStatus{state: tstate.Lost, source: tstate.SourceMaster, reason: tstate.ReasonAgentRemoved,
			message: "node " + t.node + " left the cluster and its pod was deleted"})
	case t.deleted && t.killing && t.absent:
		return set(phaseStatus{state: tstate.Killed, source: tstate.SourceMaster, message: "killed: its pod " + t.pod + " was not there"})
	case t.deleted && t.killing:
		return set(phaseStatus{state: tstate.Killed, source: tstate.SourceMaster, message: "killed: its pod was deleted"})
	case t.deleted:
		return set(t.stoppedFromOutside())
	case t.running != nil:
		return t.statusOf(t.running, now), true
	}
	return st, false
}

// stoppedFromOutside is the state of a task whose pod someone else ended, or which the API
// server says has no pod though the informer never showed one (absent): LOST, so that
// failover runs it again.
func (t *task) stoppedFromOutside() phaseStatus {
	if t.absent {
		msg := "its pod " + t.pod + " vanished: created, then deleted before the engine saw it (while it could not watch the API server), so how it ran is not known"
		if t.unsure {
			msg = "the answer to its pod's creation was lost and its pod " + t.pod + " is not there: it was never created, or it vanished (deleted before the engine saw it)"
		}
		return phaseStatus{state: tstate.Lost, source: tstate.SourceMaster, reason: tstate.ReasonTaskUnknown, message: msg}
	}
	if t.obj != nil && t.obj.Status.Reason == "DeadlineExceeded" {
		return failedPod(t.obj, t.memMB)
	}
	if t.obj != nil && t.obj.Status.Reason == "Evicted" {
		return failedPod(t.obj, t.memMB)
	}
	return phaseStatus{state: tstate.Lost, source: tstate.SourceMaster, reason: tstate.ReasonKilledDuringLaunch,
		message: "the pod " + t.pod + " was deleted by someone other than the scheduler (by hand, a drain or an eviction)"}
}

// maxFinished bounds the memory of tasks whose pods are gone (engine.finished), so that a
// late informer event or report does not bring one back.
const maxFinished = 1 << 14
