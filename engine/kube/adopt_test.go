package kube

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// lossyCreates is a fake clientset whose pod creations go through, the first `lose` of
// them answered by a lost connection (the leader cut from the API server while it
// creates); creates counts the pods really created.
func lossyCreates(lose int32) (*fake.Clientset, *atomic.Int32) {
	cs := fake.NewClientset(node("n1", "2", "4Gi", false), kubeNS("ns"))
	var creates atomic.Int32
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, obj, a.GetNamespace()); err != nil {
			return true, nil, err // AlreadyExists
		}
		if creates.Add(1) <= lose {
			return true, nil, errors.New("http2: client connection lost")
		}
		return true, obj, nil
	})
	return cs, &creates
}

func transientLaunch(job string) engine.TaskLaunch {
	tid := jobs.NewTaskID(job, 0, jobs.KindReady, "").String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: job, TaskID: tid, ShardingTotalCount: 1},
		Job: jobs.Config{JobName: job, JobExecutionType: jobs.Transient, ShardingTotalCount: 1}, App: app.Config{AppName: "a"}}
	return engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td, Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", "n1")}}
}

// next waits for the next update of task id in state s (others are passed over).
func (c *chanHandler) next(t *testing.T, id string, s tstate.State) engine.Status {
	t.Helper()
	for {
		select {
		case st := <-c.updates:
			if st.TaskID == id && st.State == s {
				return st
			}
		case <-time.After(time.Minute):
			t.Fatalf("no %s update of %s within a minute", s, id)
		}
	}
}

// accept is Accept on the engine's latest offer (one the engine replaced meanwhile is
// passed over).
func accept(t *testing.T, e *Engine, h *chanHandler, ls []engine.TaskLaunch, _ time.Duration) error {
	t.Helper()
	for {
		err := e.Accept(t.Context(), []string{h.offers(t)[0].ID}, ls, -1)
		if !errors.Is(err, ErrUnknownOffer) {
			return err
		}
	}
}

func runLossy(t *testing.T, lose int32) (*Engine, *chanHandler, *atomic.Int32, *fake.Clientset) {
	cs, creates := lossyCreates(lose)
	e, h := runOn(t, cs)
	return e, h, creates, cs
}

// runOn runs an engine of namespace ns on cs until the test ends.
func runOn(t *testing.T, cs *fake.Clientset) (*Engine, *chanHandler) {
	t.Helper()
	e, err := New(Config{Client: cs, Namespace: "ns", ExecutorImage: "img", SchedulerURLs: []string{"http://s"}, TaskToken: func(string) string { return "t" }})
	if err != nil {
		t.Fatal(err)
	}
	h := newChanHandler()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = e.Run(ctx, h) }()
	return e, h
}

// TestLaunchAgainAfterALostCreateAdoptsThePod: a pod creation whose answer is lost fails
// the Accept (the pod may exist); the scheduler's launch of the same task id again does
// not create a second pod: the engine tracks the one there is and tells the scheduler its
// state again (RUNNING, then its end as its executor reports it).
func TestLaunchAgainAfterALostCreateAdoptsThePod(t *testing.T) {
	e, h, creates, cs := runLossy(t, 1)
	ctx := t.Context()
	l := transientLaunch("j")
	if err := accept(t, e, h, []engine.TaskLaunch{l}, -1); err == nil {
		t.Fatal("Accept succeeded though the creation's answer was lost")
	}
	// The pod runs meanwhile: its executor reports; the scheduler, not holding the task
	// as running, takes the update as an orphan's.
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: l.TaskID, State: tstate.Running}); err != nil {
		t.Fatal(err)
	}
	h.next(t, l.TaskID, tstate.Running)
	if err := accept(t, e, h, []engine.TaskLaunch{l}, -1); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	h.next(t, l.TaskID, tstate.Running) // told again, now that the scheduler holds it
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: l.TaskID, State: tstate.Finished, Data: []byte("report")}); err != nil {
		t.Fatal(err)
	}
	if st := h.next(t, l.TaskID, tstate.Finished); string(st.Data) != "report" {
		t.Errorf("FINISHED carries %q, want the executor's report", st.Data)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d pods created, want 1", n)
	}
	pods, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) > 1 {
		t.Errorf("pods %d (%v), want at most 1", len(pods.Items), err)
	}
}

// TestLaunchAgainOfAnEndedPodIsToldItsEnd: the pod of a lost creation ran to its end, the
// scheduler took the end as an orphan's and the pod was deleted, all before the scheduler
// launched the task again: the launch creates no pod, it is told the end the task had.
func TestLaunchAgainOfAnEndedPodIsToldItsEnd(t *testing.T) {
	e, h, creates, cs := runLossy(t, 1)
	ctx := t.Context()
	l := transientLaunch("j")
	if err := accept(t, e, h, []engine.TaskLaunch{l}, -1); err == nil {
		t.Fatal("Accept succeeded though the creation's answer was lost")
	}
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: l.TaskID, State: tstate.Finished, Data: []byte("report")}); err != nil {
		t.Fatal(err)
	}
	h.next(t, l.TaskID, tstate.Finished)
	for { // released: its pod deleted, the task forgotten
		e.mu.Lock()
		gone := e.finished.Has(l.TaskID)
		e.mu.Unlock()
		if gone {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := cs.CoreV1().Pods("ns").Get(ctx, podName("j", 0, l.TaskID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ended pod not deleted: %v", err)
	}
	if err := accept(t, e, h, []engine.TaskLaunch{l}, -1); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	if st := h.next(t, l.TaskID, tstate.Finished); string(st.Data) != "report" {
		t.Errorf("FINISHED carries %q, want the executor's report", st.Data)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d pods created, want 1", n)
	}
}

// TestLostCreateAnswerFailsTheWholeAccept: one creation of several losing its answer fails
// the Accept (its task is not dropped: a drop would requeue it under a new id beside its
// pod); the pods created are kept and adopted by the launch again.
func TestLostCreateAnswerFailsTheWholeAccept(t *testing.T) {
	e, h, creates, _ := runLossy(t, 1)
	ls := []engine.TaskLaunch{transientLaunch("a"), transientLaunch("b")}
	if err := accept(t, e, h, ls, -1); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("Accept with a creation's answer lost: err = %v, want ErrUnavailable (the scheduler backs off)", err)
	}
	if err := accept(t, e, h, ls, -1); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("%d pods created, want 2", n)
	}
	if !refused(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("quota"))) || refused(errors.New("EOF")) ||
		refused(apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1)) {
		t.Error("refused tells an answer from a lost one wrongly")
	}
}

// TestUnreachableAPIServerFailsAcceptAsUnavailable: an Accept whose creations the API
// server could not serve (its connection refused, 503, 429) fails with
// engine.ErrUnavailable, so the scheduler waits before launching again (rather than
// retrying such a launch about 20 times a second); one it refused for the
// pods themselves (403: a full quota) does not.
func TestUnreachableAPIServerFailsAcceptAsUnavailable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		down bool
	}{
		{"connection refused", errors.New("Post \"https://127.0.0.1:6443/api/v1/namespaces/ns/pods\": dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		{"503", apierrors.NewServiceUnavailable("etcd is unavailable"), true},
		{"504", apierrors.NewServerTimeout(gr, "create", 1), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"403 quota", apierrors.NewForbidden(gr, "p", errors.New("exceeded quota")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(node("n1", "2", "4Gi", false), kubeNS("ns"))
			cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			e, h := runOn(t, cs)
			err := accept(t, e, h, []engine.TaskLaunch{transientLaunch("a"), transientLaunch("b")}, -1)
			if err == nil {
				t.Fatal("Accept succeeded though every creation failed")
			}
			if got := errors.Is(err, engine.ErrUnavailable); got != tc.down {
				t.Fatalf("err = %v: ErrUnavailable %v, want %v", err, got, tc.down)
			}
		})
	}
}
