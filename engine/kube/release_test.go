package kube

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// releaseEngine is a test engine with one task's pod per name on node n1, in phase.
func releaseEngine(clk clock.Clock, hold time.Duration, phases map[string]corev1.PodPhase) *Engine {
	e := testEngine(clk)
	e.cfg.FinishedPodHold = hold
	for name, ph := range phases {
		e.tasks[name] = &task{id: name, pod: "pod-" + name, node: "n1", ns: "ns",
			obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: ph}}}
	}
	return e
}

// commit answers the task's terminal update as committed by the scheduler.
func commit(e *Engine, id string) {
	e.handled(id, engine.Status{TaskID: id, State: tstate.Finished}, tstate.Running, true)
}

// deletedPods is the pods the engine asked the API server to delete.
func deletedPods(e *Engine) map[string]bool {
	out := map[string]bool{}
	for _, a := range e.cfg.Client.(*fake.Clientset).Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out[d.GetName()] = true
		}
	}
	return out
}

// isHeld: the task's pod is still held (releaseHeld decides in the step itself; the
// deletion it starts runs on a goroutine of its own).
func isHeld(e *Engine, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.held[id]
	return ok
}

// deletedNow lets the deletions started so far (each on a goroutine of its
// own) finish, synctest.Wait in the test's bubble, and returns the pods
// deleted: a pod not in it was not, and will not be, deleted by those steps.
func deletedNow(e *Engine) map[string]bool {
	synctest.Wait()
	return deletedPods(e)
}

// mustDeleted fails unless the steps so far deleted pod.
func mustDeleted(t *testing.T, e *Engine, pod string) {
	t.Helper()
	if d := deletedNow(e); !d[pod] {
		t.Fatalf("pod %s not deleted; deleted: %v", pod, d)
	}
}

// TestFinishedPodHeldWhileItsNodeStartsPods: a finished task's pod is not deleted while
// another pod of ours on its node is starting (Pending, or created and not yet seen); it is
// deleted once that one runs.
func TestFinishedPodHeldWhileItsNodeStartsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 30*time.Second, map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodPending})
		e.tasks["c"] = &task{id: "c", pod: "pod-c", node: "n1", ns: "ns", created: true} // created, not yet in the informer
		commit(e, "a")
		e.step()
		e.mu.Lock()
		e.tasks["b"].obj.Status.Phase = corev1.PodRunning
		e.mu.Unlock()
		_, next := e.step()
		if !next.Equal(t0.Add(30 * time.Second)) {
			t.Errorf("next step at %v, want the hold's end %v", next, t0.Add(30*time.Second))
		}
		if d := deletedNow(e); !isHeld(e, "a") || len(d) != 0 {
			t.Fatalf("pod-a released (deleted: %v) while pod-c was starting on the node", d)
		}
		e.mu.Lock()
		e.tasks["c"].created, e.tasks["c"].obj = false, &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		e.mu.Unlock()
		e.step()
		mustDeleted(t, e, "pod-a")
		if d := deletedNow(e); d["pod-b"] || d["pod-c"] {
			t.Errorf("deleted %v, want pod-a alone", d)
		}
	})
}

// TestFinishedPodHoldEnds: a node that keeps starting pods holds a finished pod at most
// FinishedPodHold; with 0 it is deleted at once; a pod on another node is not held.
func TestFinishedPodHoldEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 30*time.Second, map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodPending, "other": corev1.PodSucceeded})
		e.tasks["other"].node = "n2"
		commit(e, "a")
		commit(e, "other")
		e.step()
		mustDeleted(t, e, "pod-other")
		clk.Advance(29 * time.Second)
		e.step()
		if !isHeld(e, "a") || deletedNow(e)["pod-a"] {
			t.Fatal("pod-a released before its hold ended")
		}
		clk.Advance(time.Second)
		e.step()
		mustDeleted(t, e, "pod-a")

		e = releaseEngine(clk, 0, map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodPending})
		commit(e, "a")
		e.step()
		mustDeleted(t, e, "pod-a")
	})
}

// TestFinishedPodHeldWhileTheKubeletLags: the kubelet reports a pod's start late on a busy
// node, so a task can end (its executor reports to the scheduler) while its pod and the
// others' still show Pending: finished pods are held until none of ours on the node shows
// Pending, finished or not, then released together.
func TestFinishedPodHeldWhileTheKubeletLags(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 30*time.Second, map[string]corev1.PodPhase{"a": corev1.PodSucceeded, "b": corev1.PodPending})
		commit(e, "a")
		commit(e, "b") // its executor ended; the kubelet has not yet said its pod runs
		e.step()
		if d := deletedNow(e); !isHeld(e, "a") || !isHeld(e, "b") || len(d) != 0 {
			t.Fatalf("released (deleted: %v) while pod-b still showed Pending", d)
		}
		e.mu.Lock()
		e.tasks["b"].obj.Status.Phase = corev1.PodSucceeded
		e.mu.Unlock()
		e.step()
		mustDeleted(t, e, "pod-a")
		mustDeleted(t, e, "pod-b")
	})
}

// TestPodOfATaskLostWithItsNodeIsNotHeld: a task declared lost because its node left the
// cluster has its pod deleted at once, even while pods (its own among them) show Pending on
// that node: a kubelet coming back under the node's name must not start it beside the
// task's relaunch.
func TestPodOfATaskLostWithItsNodeIsNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 30*time.Second, map[string]corev1.PodPhase{"a": corev1.PodPending, "b": corev1.PodPending})
		e.onNodeDeleted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
		e.handled("a", engine.Status{TaskID: "a", State: tstate.Lost}, tstate.Staging, true)
		e.step()
		mustDeleted(t, e, "pod-a")
		if isHeld(e, "a") {
			t.Error("pod-a still held after its deletion")
		}
	})
}
