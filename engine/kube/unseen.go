package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The engine learns of its pods from its informer, but the informer can miss a pod's whole
// life: while the API server is stopped or out of reach its watch is down, and the list it
// makes when the API server answers again shows only the pods there are then. A pod
// created in that gap (its creation sent as the API server went away, taken when it came
// back) and deleted before the list (kwok runs a pod in milliseconds) never reaches the
// engine, and its task stayed STAGING for good: every reconciliation was answered STAGING
// and no end ever came. And a creation whose answer was lost (unanswered) may or may not
// have made its pod at all; the informer cannot tell a pod not yet shown from one that
// never will be.
//
// So the API server is asked (a GET, which reads etcd, not a cache) about each pod the
// engine created, or may have, and the informer has not shown probeAfter after the
// creation: a pod found is left for the informer to report (its status comes as ever); a
// pod not there makes its task LOST (REASON_TASK_UNKNOWN: neither whether nor how it ran is
// known), and the scheduler runs the task again by its usual rules. While the API server
// cannot answer, the question is asked again, each time a little later.
//
// A pod of such a task can still land after its loss was told: a creation the API server
// read from its socket, or wrote to etcd, after the client gave it up. Nothing in the API
// refuses it: a create takes no precondition, and a DELETE of a name with no pod there
// leaves nothing that would stop it. Only an object of that very name would, held until no
// request sent before the GET can land (the API server's request timeout, a minute by
// default), and that is not done. The run again is a task of its own (a new task id, so a
// new pod name): such a pod is known as the lost task's by its name, and is deleted as
// soon as the informer shows it (late), with no grace period: the API server removes it at
// once and the kubelet stops its containers within its minimum grace (2 s), so the run
// again has it beside for the informer's delay, the deletion's round trip and those 2 s at
// most, while the API server can be reached.

// lateTries bounds the deletions of a late pod tried (about 2 minutes of them).
const lateTries = 8

// probeAfter is how long after a creation's answer (or its loss) the API server is asked
// about a pod the informer has not shown: the informer shows a pod in milliseconds when its
// watch is up, and a creation whose answer was lost has had the time to land.
const probeAfter = 5 * time.Second

// probeRecheck is how long after the API server said the pod is there it is asked again
// while the informer still has not shown it (the pod may yet go unseen).
const probeRecheck = 30 * time.Second

// The waits before asking again after an ask that failed: doubling from probeRetry up to
// probeRetryMax.
const (
	probeRetry    = time.Second
	probeRetryMax = 30 * time.Second
)

// probeUnseen starts the asks that are due and returns when the next one is (zero: none).
// Called with e.mu held.
func (e *Engine) probeUnseen(now time.Time) (next time.Time) {
	for id, t := range e.tasks {
		switch {
		case t.probeAt.IsZero():
		case t.obj != nil || t.deleted || t.dropped != nil || t.committed || t.pod == "":
			t.probeAt = time.Time{}
		case now.Before(t.probeAt):
			if next.IsZero() || t.probeAt.Before(next) {
				next = t.probeAt
			}
		default:
			t.probeAt = time.Time{} // none again until this one's answer
			go e.probe(id, e.ns.taskNamespace(id, t.ns), t.pod)
		}
	}
	return next
}

// probe asks the API server whether the pod of task id exists and notes the answer.
func (e *Engine) probe(id, ns, pod string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.cfg.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.wake()
	t := e.tasks[id]
	if t == nil || t.obj != nil || t.deleted || t.dropped != nil || t.committed {
		return // shown, ended or settled meanwhile
	}
	now := e.clock.Now()
	switch {
	case err == nil:
		t.probeAt, t.probeGap = now.Add(probeRecheck), 0
	case apierrors.IsNotFound(err):
		e.log.Warn("the pod of a task is not there and was never seen: the task is lost", "task", id, "pod", pod, "namespace", ns,
			"creation_answered", !t.unsure)
		t.absent, t.deleted, t.created, t.dirty = true, true, false, true
	default:
		t.probeGap = min(max(2*t.probeGap, probeRetry), probeRetryMax)
		t.probeAt = now.Add(t.probeGap)
		e.log.Info("ask whether the pod of a task is there; asking again", "task", id, "pod", pod, "err", err, "next", t.probeGap)
	}
}

// late reports whether a pod of task id the informer shows must not run: the task's end was
// committed and its pod gone (finished), or the API server had said its pod is not there
// (absent) and its loss or kill was told. A pod shown before its absence was told is the
// task's after all: it is tracked as any other. Called with e.mu held.
func (e *Engine) late(id string) bool {
	if e.finished.Has(id) {
		return true
	}
	t := e.tasks[id]
	if t == nil || !t.absent {
		return false
	}
	if t.killing || t.sent.Terminal() || t.committed {
		return true
	}
	t.absent, t.deleted = false, false
	return false
}

// deleteLate deletes a pod that must not run (late) with no grace period: it runs the task
// of no live launch, maybe beside the task's run again, so its job gets no time to end
// cleanly (a kill's grace is for a task the scheduler wants ended well). A failed deletion
// is tried again, a little later each time, lateTries times in all (no event may come to
// start another).
func (e *Engine) deleteLate(id string, p *corev1.Pod) {
	grace := int64(0)
	gap := probeRetry
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := e.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			e.log.Warn("deleted the pod of a task told ended or lost before it showed up", "task", id, "pod", p.Name)
			return
		}
		if try == lateTries {
			e.log.Error("delete the pod of a task told ended or lost before it showed up: giving up", "task", id, "pod", p.Name, "err", err)
			return
		}
		e.log.Warn("delete the pod of a task told ended or lost before it showed up; trying again", "task", id, "pod", p.Name, "err", err, "next", gap)
		<-e.clock.NewTimer(gap).C()
		gap = min(2*gap, probeRetryMax)
	}
}
