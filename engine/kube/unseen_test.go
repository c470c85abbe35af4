package kube

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// unseenEngine is a test engine (no informer: the test shows it pods with onPod) on node
// n1 whose API server creates pods as create says: made in its store or not, and the
// error answered.
func unseenEngine(clk clock.Clock, create func(p *corev1.Pod) (made bool, err error)) (*Engine, *fake.Clientset) {
	cs := fake.NewClientset(kubeNS("ns"))
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		made, err := create(p)
		if made {
			if err := cs.Tracker().Create(podsGVR, p, a.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		if err != nil {
			return true, nil, err
		}
		return true, p, nil
	})
	e := testEngine(clk)
	e.cfg.Client = cs
	e.onNode(node("n1", "2", "4Gi", false))
	return e, cs
}

// acceptOne accepts one launch of job j on the engine's offer of n1.
func acceptOne(t *testing.T, e *Engine) (engine.TaskLaunch, error) {
	t.Helper()
	l := transientLaunch("j")
	return l, e.Accept(context.Background(), []string{offered(e)[0].ID}, []engine.TaskLaunch{l}, -1)
}

// reconciled is the engine's reconciliation answer for task id now.
func reconciled(t *testing.T, e *Engine, id string) engine.Status {
	t.Helper()
	if err := e.Reconcile(context.Background(), []engine.TaskRef{{TaskID: id}}); err != nil {
		t.Fatal(err)
	}
	for _, st := range updates(e) {
		if st.TaskID == id && st.Reason == tstate.ReasonReconciliation {
			return st
		}
	}
	t.Fatalf("no reconciliation answer for %s", id)
	return engine.Status{}
}

// lostOf is the LOST update of task id among us (false: none).
func lostOf(us []engine.Status, id string) (engine.Status, bool) {
	for _, u := range us {
		if u.TaskID == id && u.State == tstate.Lost {
			return u, true
		}
	}
	return engine.Status{}, false
}

// TestPodCreatedAndDeletedUnseenIsLost: a pod the API server created (and answered so)
// that ran and was deleted while the engine's informer could not see it (its watch down
// with the API server, which came back before the pod went) never reaches the informer.
// Its task was answered TASK_STAGING to the end, no event ever ending it;
// once the API server says the pod is not there, the task is LOST, with the reason that
// says it is unknown and a message that says its pod vanished.
func TestPodCreatedAndDeletedUnseenIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e, _ := unseenEngine(clk, func(*corev1.Pod) (bool, error) { return false, nil }) // made, answered, gone unseen
		l, err := acceptOne(t, e)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		clk.Advance(probeAfter - time.Millisecond)
		updates(e)
		synctest.Wait()
		if st := reconciled(t, e, l.TaskID); st.State != tstate.Staging {
			t.Fatalf("before the API server is asked: %s, want TASK_STAGING", st.State)
		}
		clk.Advance(time.Millisecond)
		updates(e) // asks the API server
		synctest.Wait()
		us := updates(e)
		st, ok := lostOf(us, l.TaskID)
		if !ok {
			t.Fatalf("updates %+v, want the task LOST", us)
		}
		if st.Reason != tstate.ReasonTaskUnknown || st.Source != tstate.SourceMaster || !strings.Contains(st.Message, "vanished") {
			t.Errorf("LOST %s from %s: %q, want REASON_TASK_UNKNOWN from the master saying the pod vanished", st.Reason, st.Source, st.Message)
		}
		e.mu.Lock()
		free := e.frees()(e.nodes["n1"])
		e.mu.Unlock()
		if free.cpus != 2 {
			t.Errorf("n1 offers %v cpus, want all 2 back", free.cpus)
		}
	})
}

// TestUnseenPodThereIsLeftToTheInformer: a created pod the informer has not shown is asked
// for; found, nothing is told of it (the informer tells its status), and it is asked for
// again later: gone by then without the informer having shown it, its task is lost.
func TestUnseenPodThereIsLeftToTheInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e, cs := unseenEngine(clk, func(*corev1.Pod) (bool, error) { return true, nil })
		l, err := acceptOne(t, e)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		clk.Advance(probeAfter)
		updates(e)
		synctest.Wait()
		if us := updates(e); len(us) != 0 {
			t.Fatalf("told %+v of a pod there", us)
		}
		name := podName("j", 0, l.TaskID)
		if err := cs.Tracker().Delete(podsGVR, "ns", name); err != nil {
			t.Fatal(err)
		}
		clk.Advance(probeRecheck)
		updates(e)
		synctest.Wait()
		if _, ok := lostOf(updates(e), l.TaskID); !ok {
			t.Fatal("the pod gone unseen: its task not lost")
		}
	})
}

// TestLostCreateOfNoPodIsLostOnceTheAPIServerAnswers: a creation whose answer was lost
// (the API server stopped under it) and which made no pod fails the Accept as
// engine.ErrOutcomeUnknown; the task is not lost while the API server cannot say whether
// the pod is there (it was answered LOST at once, and the scheduler ran the shard again
// beside the pod when it had been made after all); once the API server answers that it is
// not, the task is LOST (REASON_TASK_UNKNOWN), and a pod of it that lands after that is
// deleted at once.
func TestLostCreateOfNoPodIsLostOnceTheAPIServerAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e, cs := unseenEngine(clk, func(*corev1.Pod) (bool, error) {
			return false, &url.Error{Op: "Post", URL: "https://kube/api/v1/namespaces/ns/pods", Err: io.EOF}
		})
		var down atomic.Bool
		down.Store(true)
		cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, apierrors.NewServiceUnavailable("the API server is starting")
			}
			return false, nil, nil
		})
		l, err := acceptOne(t, e)
		if !errors.Is(err, engine.ErrOutcomeUnknown) || errors.Is(err, engine.ErrUnavailable) {
			t.Fatalf("accept: %v, want ErrOutcomeUnknown alone", err)
		}
		if st := reconciled(t, e, l.TaskID); st.State != tstate.Staging {
			t.Fatalf("reconciled at once: %s, want TASK_STAGING (the pod may be there)", st.State)
		}
		clk.Advance(probeAfter)
		updates(e) // asks; the API server cannot answer
		synctest.Wait()
		if _, ok := lostOf(updates(e), l.TaskID); ok {
			t.Fatal("lost while the API server could not say whether its pod is there")
		}
		if st := reconciled(t, e, l.TaskID); st.State != tstate.Staging {
			t.Fatalf("reconciled while the API server is down: %s, want TASK_STAGING", st.State)
		}
		down.Store(false)
		clk.Advance(probeRetry)
		updates(e) // asks again
		synctest.Wait()
		st, ok := lostOf(updates(e), l.TaskID)
		if !ok {
			t.Fatal("the API server says the pod is not there: the task not lost")
		}
		if st.Reason != tstate.ReasonTaskUnknown || !strings.Contains(st.Message, "answer to its pod's creation was lost") {
			t.Errorf("LOST %s: %q", st.Reason, st.Message)
		}
		// The creation lands after all (read by the API server after the client gave it up).
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName("j", 0, l.TaskID), Namespace: "ns",
			Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelFramework: labelValue(e.frameworkID)},
			Annotations: map[string]string{AnnotationTask: l.TaskID}}, Spec: corev1.PodSpec{NodeName: "n1"}}
		if err := cs.Tracker().Create(podsGVR, p, "ns"); err != nil {
			t.Fatal(err)
		}
		e.onPod(p)
		mustDeleted(t, e, p.Name)
		if g, ok := deleteGrace(e, p.Name); !ok || g != 0 {
			t.Errorf("the late pod deleted with grace %d s (set %v), want 0: at once", g, ok)
		}
		if us := updates(e); len(us) != 0 {
			t.Errorf("told %+v of the late pod", us)
		}
	})
}

// TestLostCreateOfAPodMadeIsItsTask: a creation whose answer was lost but which made its
// pod: the API server says the pod is there, the task is not lost, and the informer's view
// of the pod is told as ever.
func TestLostCreateOfAPodMadeIsItsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e, cs := unseenEngine(clk, func(*corev1.Pod) (bool, error) {
			return true, &url.Error{Op: "Post", URL: "https://kube/api/v1/namespaces/ns/pods", Err: io.EOF}
		})
		l, err := acceptOne(t, e)
		if !errors.Is(err, engine.ErrOutcomeUnknown) {
			t.Fatalf("accept: %v, want ErrOutcomeUnknown", err)
		}
		clk.Advance(probeAfter)
		updates(e)
		synctest.Wait()
		if us := updates(e); len(us) != 0 {
			t.Fatalf("told %+v of a pod there", us)
		}
		obj, err := cs.Tracker().Get(podsGVR, "ns", podName("j", 0, l.TaskID))
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Status.Phase = corev1.PodRunning
		e.onPod(p)
		if s := stateOf(updates(e), l.TaskID); s != tstate.Running {
			t.Fatalf("told %q, want TASK_RUNNING", s)
		}
		if d := deletedNow(e); len(d) != 0 {
			t.Errorf("deleted %v", d)
		}
	})
}

// TestKillOfAnUnseenPodNotThereEndsTheTask: a kill of a task whose pod the informer never
// showed and the API server does not have ends the task (KILLED) instead of leaving it
// STAGING with no event to come.
func TestKillOfAnUnseenPodNotThereEndsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e, _ := unseenEngine(clk, func(*corev1.Pod) (bool, error) { return false, nil })
		l, err := acceptOne(t, e)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		if err := e.Kill(context.Background(), l.TaskID, "n1"); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(updates(e), l.TaskID); s != tstate.Killed {
			t.Fatalf("told %q, want TASK_KILLED", s)
		}
	})
}

// deleteGrace is the grace period the engine's last deletion of pod asked (ok false: no
// deletion, or none set).
func deleteGrace(e *Engine, pod string) (int64, bool) {
	g, ok := int64(0), false
	for _, a := range e.cfg.Client.(*fake.Clientset).Actions() {
		if d, isDel := a.(k8stesting.DeleteAction); isDel && a.GetResource().Resource == "pods" && d.GetName() == pod {
			o := d.GetDeleteOptions()
			g, ok = 0, o.GracePeriodSeconds != nil
			if ok {
				g = *o.GracePeriodSeconds
			}
		}
	}
	return g, ok
}
