package kube

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// A launch whose pod creation lost its answer (a timeout, a broken connection: the leader
// cut off from the API server) may have made its pod. Accept then fails as a whole
// (created), the scheduler rolls the launch back and launches it again under the same task
// ids (queue.Relaunch), so the pod's name is the same: the engine adopts the pod it finds
// instead of creating another (the fault soak, kube seed 542: with a new id the shard ran
// twice).

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
// at once (the fault soak, kube seed 552).
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
// lost its answer was rolled back by the scheduler and comes again under the same task id
// (the fault soak, kube seed 542), and the pod it created is this task's. The pod is not
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
