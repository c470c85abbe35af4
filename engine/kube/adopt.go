package kube

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// A launch whose pod creation lost its answer (a timeout, a broken connection: the leader
// cut off from the API server) may have made its pod. Accept then fails as a whole
// (created), the scheduler rolls the launch back and launches it again under the same task
// ids (queue.Relaunch), so the pod's name is the same: the engine adopts the pod it finds
// instead of creating another (with a new id the shard would run twice).

// refused reports a creation error that is the API server's answer that it did not create
// the pod (a bad pod, a missing namespace, a full quota, too many requests). Anything else
// (the connection lost, a timeout, a server error) leaves its outcome unknown.
func refused(err error) bool {
	if errors.Is(err, ErrPodTemplate) || errors.Is(err, ErrNamespace) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != 408 && code != 504
}

// unreachable reports a creation error that says the API server cannot be reached or cannot
// serve now: no answer of its own (the connection refused, reset or lost, a timeout), or an
// answer that it is overloaded or failing (408, 429, 5xx). Accept wraps such a failure with
// engine.ErrUnavailable, and the scheduler backs its launches off instead of retrying them
// at once (each retry is a commit, an API request and a roll-back while nothing can succeed).
func unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrPodTemplate) || errors.Is(err, ErrNamespace) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	code := st.Status().Code
	return code >= 500 || code == 408 || code == 429
}

// adopt takes the launch of a task the engine already knows: a launch whose pod creation
// lost its answer was rolled back by the scheduler and comes again under the same task id,
// and the pod it created is this task's. The pod is not
// created twice: the task is kept and the scheduler, which now holds it as running, is
// told its state again (what it was told meanwhile was about a task it did not hold). A
// task whose pod has come and gone meanwhile is told by the end it had. Called with e.mu
// held.
func (e *Engine) adopt(id string) bool {
	t := e.tasks[id]
	if t != nil && t.dropped != nil { // the API server refused its pod: made anew
		delete(e.tasks, id)
		return false
	}
	if t == nil {
		if !e.finished.Has(id) {
			return false
		}
		e.finished.Remove(id)
		t = &task{id: id, deleted: true, ended: e.ends.get(id)}
		if t.ended == nil {
			t.ended = &engine.Status{TaskID: id, State: tstate.Lost, Source: tstate.SourceMaster, Reason: tstate.ReasonReconciliation,
				Message: "its pod ran and was deleted before this launch of it, and how it ended is no longer known"}
		}
		e.tasks[id] = t
	}
	e.log.Info("a launch of a task whose pod exists: adopted", "task", id, "pod", t.pod, "told", t.sent)
	t.sent, t.waitSent, t.retryAt, t.dirty = "", "", time.Time{}, true
	if t.committed { // its end was taken as an orphan's: told again, and its pod kept meanwhile
		t.committed, t.committedAt = false, time.Time{}
		delete(e.held, id)
	}
	return true
}

// maxEnds bounds the ends kept of tasks whose pods are gone (endMemory).
const maxEnds = 1024

// endMemory keeps the terminal updates the scheduler took of the last maxEnds tasks whose
// pods are gone, so that a launch of one of them again (adopt: its first launch's answer
// was lost, and its pod ran and went meanwhile) is told how it ended rather than run again.
type endMemory struct {
	by   map[string]engine.Status
	ring []string
	next int
}

func (m *endMemory) put(st engine.Status) {
	if m.by == nil {
		m.by = map[string]engine.Status{}
	}
	if _, ok := m.by[st.TaskID]; !ok {
		if len(m.ring) < maxEnds {
			m.ring = append(m.ring, st.TaskID)
		} else {
			delete(m.by, m.ring[m.next])
			m.ring[m.next] = st.TaskID
			m.next = (m.next + 1) % maxEnds
		}
	}
	m.by[st.TaskID] = st
}

// get returns the end kept of task id (nil: none).
func (m *endMemory) get(id string) *engine.Status {
	st, ok := m.by[id]
	if !ok {
		return nil
	}
	return &st
}

// unavailable is err marked engine.ErrUnavailable when it says the API server cannot be
// reached or cannot serve now (unreachable).
func unavailable(err error) error {
	if !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
}

// created settles the creations: a pod the API server refused is dropped (the scheduler
// queues its task again as never started); if it refused every one, or if a creation's
// answer was lost (refused), Accept fails, and the launch again under the same ids finds
// the pods there are (adopt.go). The tasks whose pods were created or seen are kept. A
// failure that says the API server cannot be reached or serve now (unreachable) is
// engine.ErrUnavailable: the scheduler waits before launching again.
func (e *Engine) created(launches []engine.TaskLaunch, errs []error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.wake()
	failed, unknown, down := 0, -1, -1
	for i, err := range errs {
		if t := e.tasks[launches[i].TaskID]; err == nil && t != nil && t.obj == nil && t.created {
			t.probeAt = e.clock.Now().Add(probeAfter) // unseen.go
		}
		if err != nil {
			failed++
			if unknown < 0 && !refused(err) {
				unknown = i
			}
			if down < 0 && unreachable(err) {
				down = i
			}
		}
	}
	if unknown >= 0 {
		for i, err := range errs {
			if t := e.tasks[launches[i].TaskID]; err != nil && t != nil && t.obj == nil {
				delete(e.tasks, launches[i].TaskID) // the informer brings it back if its pod exists
			}
		}
		return fmt.Errorf("kube: create pods: %d of %d failed, the outcome of %s unknown: %w", failed, len(errs), launches[unknown].TaskID, unavailable(errs[unknown]))
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		t := e.tasks[launches[i].TaskID]
		if t == nil {
			continue
		}
		t.created = false
		msg := "the Kubernetes API server refused the pod: " + oneLine(err.Error())
		if errors.Is(err, ErrPodTemplate) || errors.Is(err, ErrNamespace) {
			msg = oneLine(err.Error())
		}
		t.dropped = &phaseStatus{state: tstate.Dropped, source: tstate.SourceMaster, reason: tstate.ReasonPlacementRefused, message: msg}
		t.dirty = true
	}
	if failed == len(errs) && failed > 0 {
		for _, l := range launches {
			delete(e.tasks, l.TaskID)
		}
		if down >= 0 { // refused for overload (429): the scheduler backs off
			return fmt.Errorf("kube: create pods: %w", unavailable(errs[down]))
		}
		return fmt.Errorf("kube: create pods: %w", errs[0])
	}
	return nil
}
