package kube

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node object deleted is not a task lost. Its kubelet may merely be down: the containers
// of its pods run on, their executors report, and a kubelet that comes back registers the
// node again and goes on with the pods still bound to it: a task declared lost at the
// node's deletion can still finish, and its relaunch would run the shard again. So the engine does what Kubernetes' pod garbage collector does with the
// pods of a node that is gone (the realkube tier and the soak run none): after a
// quarantine, if the node has not come back, it deletes the pods of its tasks there at
// once (no kubelet is there to confirm an end), and a task counts as lost only when its pod
// is gone (derive), or ends as its pod or its executor says meanwhile.

// podGCQuarantine is how long a task's pod may stay on a node that is gone before the
// engine deletes it: kube-controller-manager's pod GC waits as long.
const podGCQuarantine = 40 * time.Second

// nodeGone marks the tasks on a deleted node for the garbage collection of their pods.
// Called with e.mu held.
func (e *Engine) nodeGone(name string, now time.Time) {
	for _, t := range e.tasks {
		if t.node == name && !t.committed && !t.nodeLost {
			t.nodeLost, t.gcAt, t.dirty = true, now.Add(podGCQuarantine), true
		}
	}
}

// nodeBack lifts the mark from the tasks of a node registered again before their pods were
// deleted. Called with e.mu held.
func (e *Engine) nodeBack(name string) {
	for _, t := range e.tasks {
		if t.node == name && t.nodeLost && !t.gcAt.IsZero() {
			t.nodeLost, t.gcAt, t.dirty = false, time.Time{}, true
		}
	}
}

// collectPods starts the deletion of the pods whose quarantine has passed on a node still
// gone and returns when the next quarantine ends (zero: none). Called with e.mu held.
func (e *Engine) collectPods(now time.Time) (next time.Time) {
	for _, t := range e.tasks {
		switch {
		case t.gcAt.IsZero() || t.committed || t.deleted:
		case now.Before(t.gcAt):
			if next.IsZero() || t.gcAt.Before(next) {
				next = t.gcAt
			}
		case e.nodes[t.node] != nil: // back, its informer event not yet taken
			t.nodeLost, t.gcAt = false, time.Time{}
		default:
			t.gcAt = time.Time{}
			go e.deleteOrphanPod(t.id, e.ns.taskNamespace(t.id, t.ns), t.pod)
		}
	}
	return next
}

// deleteOrphanPod deletes the pod of a task whose node is gone, at once; a pod not found
// is gone already; on an error the deletion is tried again in a second.
func (e *Engine) deleteOrphanPod(id, ns, pod string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	err := e.cfg.Client.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tasks[id]
	switch {
	case t == nil || t.committed:
	case apierrors.IsNotFound(err):
		t.deleted, t.dirty = true, true
	case err != nil:
		e.log.Warn("delete the pod of a task whose node is gone", "task", id, "pod", pod, "err", err)
		t.gcAt = e.clock.Now().Add(time.Second)
	default:
		e.log.Info("deleted the pod of a task whose node is gone", "task", id, "pod", pod)
	}
	e.wake()
}
