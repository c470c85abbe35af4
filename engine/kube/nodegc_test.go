package kube

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// stateOf is the last update of task id among us ("": none).
func stateOf(us []engine.Status, id string) tstate.State {
	var s tstate.State
	for _, u := range us {
		if u.TaskID == id {
			s = u.State
		}
	}
	return s
}

// told tells the scheduler the tasks' states as they are.
func told(e *Engine) {
	e.mu.Lock()
	for _, t := range e.tasks {
		t.dirty = true
	}
	e.mu.Unlock()
	updates(e)
}

// TestTaskOnADeletedNodeIsLostOnlyWithItsPod: a node object deleted (its kubelet down)
// makes no task on it lost at once (a running task declared lost at the deletion may
// finish a moment later, and its relaunch would run the shard again). A task
// whose executor reports its end meanwhile ends so; the others' pods are deleted after the
// pod GC's quarantine, and only then are their tasks lost.
func TestTaskOnADeletedNodeIsLostOnlyWithItsPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 0, map[string]corev1.PodPhase{"run": corev1.PodRunning, "wait": corev1.PodPending, "end": corev1.PodRunning})
		told(e)
		e.onNodeDeleted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
		if us := updates(e); stateOf(us, "run") == tstate.Lost || stateOf(us, "wait") == tstate.Lost {
			t.Fatalf("told at the node's deletion: %+v", us)
		}
		e.mu.Lock() // its executor reports its end (Report, for a task id of the form it takes)
		e.tasks["end"].final, e.tasks["end"].dirty = &engine.ExecutorReport{TaskID: "end", State: tstate.Finished}, true
		e.mu.Unlock()
		if s := stateOf(updates(e), "end"); s != tstate.Finished {
			t.Fatalf("the task that ended: %q, want FINISHED", s)
		}
		commit(e, "end")
		clk.Advance(podGCQuarantine - time.Second)
		updates(e)
		if d := deletedNow(e); d["pod-run"] || d["pod-wait"] {
			t.Fatalf("pods deleted before the quarantine's end: %v", d)
		}
		clk.Advance(time.Second)
		updates(e)
		mustDeleted(t, e, "pod-run")
		mustDeleted(t, e, "pod-wait")
		for _, id := range []string{"run", "wait"} { // the informer shows the deletion
			e.mu.Lock()
			p := e.tasks[id].obj
			e.mu.Unlock()
			e.onPodDeleted(p)
		}
		us := updates(e)
		for _, id := range []string{"run", "wait"} {
			if s := stateOf(us, id); s != tstate.Lost {
				t.Errorf("%s after its pod's deletion: %q, want LOST", id, s)
			}
		}
	})
}

// TestNodeBackWithinTheQuarantineKeepsItsPods: a node registered again before the
// quarantine's end keeps its pods, and their tasks run on.
func TestNodeBackWithinTheQuarantineKeepsItsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := releaseEngine(clk, 0, map[string]corev1.PodPhase{"run": corev1.PodRunning})
		told(e)
		e.onNodeDeleted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
		clk.Advance(10 * time.Second)
		e.onNode(node("n1", "2", "4Gi", false))
		clk.Advance(podGCQuarantine)
		if s := stateOf(updates(e), "run"); s == tstate.Lost {
			t.Errorf("told %q", s)
		}
		if d := deletedNow(e); d["pod-run"] {
			t.Error("the pod of a node back was deleted")
		}
	})
}
