package kube

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// A launch some of whose pod creations the API server could not take (its connection
// refused, 503, 429) while others went through fails as a whole (created): the scheduler
// rolls it back and launches it again under the same task ids (queue.Relaunch), so the
// pods' names are the same, and the engine adopts the pods it finds instead of creating
// others (with new ids the shard would run twice). A creation that was sent and whose
// answer was lost is another matter (unanswered, unseen.go): its pod may exist, so its
// launch is not rolled back at all.

// refused reports a creation error that is the API server's answer that it did not create
// the pod (a bad pod, a missing namespace, a full quota, too many requests).
func refused(err error) bool {
	if errors.Is(err, ErrPodTemplate) || errors.Is(err, ErrNamespace) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout
}

// unanswered reports a creation error that leaves its outcome unknown: the request went
// out, or may have, and no answer says what became of it (the connection reset or closed
// under it, a timeout, a TLS handshake cut by a proxy in front of a stopped API server), or
// the API server's answer is that it failed inside or ran out of time (500, 504, 408: its
// write to etcd may have landed all the same). A connection never made (a dial refused,
// no route) and an answer that the API server cannot serve now (503, 429) or will not
// (refused) say that no pod was made.
func unanswered(err error) bool {
	if err == nil || refused(err) {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		switch st.Status().Code {
		case http.StatusInternalServerError, http.StatusGatewayTimeout, http.StatusRequestTimeout:
			return true
		}
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// unreachable reports a creation error that says the API server cannot be reached or cannot
// serve now: no answer of its own (the connection refused, reset or lost, a timeout), or an
// answer that it is overloaded or failing (408, 429, 5xx). Accept wraps such a failure with
// engine.ErrUnavailable when it rolls the launch back (no creation's outcome unknown), and
// the scheduler backs its launches off instead of retrying them at once (each retry is a
// commit, an API request and a roll-back while nothing can succeed).
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

// adopt takes the launch of a task the engine already knows: a launch rolled back by the
// scheduler (created) comes again under the same task id, and a pod it created is this
// task's. The pod is not created twice: the task is kept and the scheduler, which now holds it as running, is
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

// adoptable reports whether adopt takes the launch of task id (it changes nothing).
// Called with e.mu held.
func (e *Engine) adoptable(id string) bool {
	if t := e.tasks[id]; t != nil {
		return t.dropped == nil
	}
	return e.finished.Has(id)
}

// maxEnds bounds the ends kept of tasks whose pods are gone (endMemory).
const maxEnds = 1024

// endMemory keeps the terminal updates the scheduler took of the last maxEnds tasks whose
// pods are gone, so that a launch of one of them again (adopt: its first launch was rolled
// back, and its pod ran and went meanwhile) is told how it ended rather than run again.
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

// created settles the creations. If any creation's outcome is unknown (unanswered), Accept
// fails with engine.ErrOutcomeUnknown and rolls nothing back: the scheduler keeps every
// task of the launch STAGING (a roll-back would let another execution of a shard run
// beside a pod created after all), the pods created are tracked as usual, a pod the API
// server refused is dropped, and each task whose outcome is unknown waits for the API
// server to say whether its pod is there (unseen.go). Otherwise a pod the API server
// refused is dropped (the scheduler queues its task again as never started); if it refused
// every one, or if a creation could not be sent (the API server unreachable), Accept fails
// and the launch again under the same ids finds the pods there are (adopt). A failure that
// says the API server cannot be reached or serve now (unreachable) is
// engine.ErrUnavailable: the scheduler waits before launching again.
func (e *Engine) created(launches []engine.TaskLaunch, errs []error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.wake()
	now := e.clock.Now()
	failed, unknown, again, down := 0, -1, -1, -1
	for i, err := range errs {
		if err == nil {
			if t := e.tasks[launches[i].TaskID]; t != nil && t.obj == nil && t.created {
				t.probeAt, t.probeGap = now.Add(probeAfter), 0
			}
			continue
		}
		failed++
		if unknown < 0 && unanswered(err) {
			unknown = i
		}
		if again < 0 && !refused(err) {
			again = i
		}
		if down < 0 && unreachable(err) {
			down = i
		}
	}
	if unknown >= 0 {
		for i, err := range errs {
			t := e.tasks[launches[i].TaskID]
			switch {
			case err == nil || t == nil || t.obj != nil: // created, or shown by the informer
			case refused(err):
				e.drop(t, err)
			default: // unanswered, or not sent while others were: the API server tells (probe)
				t.unsure, t.probeAt, t.probeGap = true, now.Add(probeAfter), 0
			}
		}
		return fmt.Errorf("kube: create pods: %d of %d failed, the outcome of %s unknown: %w: %w", failed, len(errs), launches[unknown].TaskID,
			engine.ErrOutcomeUnknown, errs[unknown])
	}
	if again >= 0 {
		for i, err := range errs {
			if t := e.tasks[launches[i].TaskID]; err != nil && t != nil && t.obj == nil {
				delete(e.tasks, launches[i].TaskID) // the informer brings it back if its pod exists
			}
		}
		return fmt.Errorf("kube: create pods: %d of %d failed, the API server did not take %s: %w", failed, len(errs), launches[again].TaskID, unavailable(errs[again]))
	}
	for i, err := range errs {
		if t := e.tasks[launches[i].TaskID]; err != nil && t != nil {
			e.drop(t, err)
		}
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

// drop marks a task whose pod the API server refused. Called with e.mu held.
func (e *Engine) drop(t *task, err error) {
	t.created, t.probeAt = false, time.Time{}
	msg := "the Kubernetes API server refused the pod: " + oneLine(err.Error())
	if errors.Is(err, ErrPodTemplate) || errors.Is(err, ErrNamespace) {
		msg = oneLine(err.Error())
	}
	t.dropped = &phaseStatus{state: tstate.Dropped, source: tstate.SourceMaster, reason: tstate.ReasonPlacementRefused, message: msg}
	t.dirty = true
}
