package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/engine"
)

// A finished task's pod is deleted once the scheduler has committed its end. Deleting a pod
// costs its node's kubelet and container runtime work (the pod's teardown, its final status,
// its containers' and snapshots' removal) on the same CPUs that start the node's next pods:
// the 20 pods of one trigger started about 5 s later on a 2-core node when the first ones
// to finish were deleted while the rest were starting (docs/benchmarks.md, binding modes).
// So a finished pod is held while any pod of this scheduler on its node is starting
// (created, not yet shown Running, its own included), for at most Config.FinishedPodHold after its end was
// committed; it holds no room meanwhile (a Succeeded or Failed pod counts against no node).

// releaseHeld deletes the held pods that may go now and returns when the next one must
// (zero: none held, or only on a change). Called with e.mu held.
func (e *Engine) releaseHeld(now time.Time) (next time.Time) {
	if len(e.held) == 0 {
		return time.Time{}
	}
	// Nodes with a pod of ours starting, as the API server shows it: a task whose executor
	// has reported its end (committed, perhaps held itself) counts while the kubelet has
	// not yet reported its pod Running. A loaded kubelet reports a pod's start well after
	// its container started, and that report, like the other pods' starts, is still to do.
	starting := map[string]bool{}
	for _, t := range e.tasks {
		if !t.deleted && t.node != "" && podStarting(t) {
			starting[t.node] = true
		}
	}
	for id := range e.held {
		t := e.tasks[id]
		if t == nil { // its pod was deleted meanwhile (gone)
			delete(e.held, id)
			continue
		}
		due := t.committedAt.Add(e.cfg.FinishedPodHold)
		// A task lost with its node is not held: its pod may still be bound to the node's
		// name, and a kubelet that comes back under it would start the pod beside the
		// task's relaunch (a pending pod can be started by a returning kubelet long after its
		// task was declared lost).
		if !t.deleted && t.pod != "" && !t.nodeLost && starting[t.node] && now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		delete(e.held, id)
		go e.tails.release(t.id, e.ns.taskNamespace(t.id, t.ns), t.pod, t.final, t.deleted)
	}
	return next
}

// podStarting is a task whose pod was created and has not yet started its containers.
func podStarting(t *task) bool {
	if t.obj == nil {
		return t.created
	}
	return t.obj.DeletionTimestamp == nil && t.obj.Status.Phase == corev1.PodPending
}

// release keeps a finished task's log tail, then deletes its pod (a pod already gone: the
// engine forgets the task).
func (e tailKeeper) release(id, ns, pod string, final *engine.ExecutorReport, deleted bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.keep(ctx, id, ns, pod, final)
	if deleted || pod == "" {
		e.forget(id)
		return
	}
	// Not a force deletion (grace 0): the kubelet confirms the end of the pod's containers
	// first. Force-deleting finished pods while the next ones start on the node went with
	// those next pods failing at start (ContainerStatusUnknown, exit code 2 with no log).
	grace := int64(1)
	err := e.cfg.Client.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		e.log.Warn("delete the pod of a finished task", "task", id, "pod", pod, "err", err)
	}
}
