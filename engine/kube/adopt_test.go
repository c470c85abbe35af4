package kube

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	return flakyCreates(func(n int32, _ string) (bool, error) {
		if n <= lose {
			return true, errors.New("http2: client connection lost")
		}
		return true, nil
	})
}

// flakyCreates is a fake clientset whose pod creations do as fail says for the nth
// creation (from 1) of job's pod: made or not, and the error answered (nil: the pod);
// creates counts the pods really created.
func flakyCreates(fail func(n int32, job string) (made bool, err error)) (*fake.Clientset, *atomic.Int32) {
	cs := fake.NewClientset(node("n1", "2", "4Gi", false), kubeNS("ns"))
	var tries, creates atomic.Int32
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		made, err := fail(tries.Add(1), obj.(*corev1.Pod).Labels[LabelJob])
		if !made {
			return true, nil, err
		}
		if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, obj, a.GetNamespace()); err != nil {
			return true, nil, err // AlreadyExists
		}
		creates.Add(1)
		return true, obj, err
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

// busyFirstB answers the first creation of job b's pod with the API server's 503 (no pod
// made) and makes every other pod: a launch of a and b is rolled back.
func busyFirstB() func(int32, string) (bool, error) {
	var once atomic.Bool
	return func(_ int32, job string) (bool, error) {
		if job == "b" && once.CompareAndSwap(false, true) {
			return false, apierrors.NewServiceUnavailable("the server is starting")
		}
		return true, nil
	}
}

// TestLaunchAgainAfterARollBackAdoptsThePod: a launch some of whose creations the API
// server did not take is rolled back as a whole; the scheduler's launch of the same task
// ids again does not create a second pod for the one made: the engine tracks the pod it
// finds and tells the scheduler its state again (RUNNING, then its end as its executor
// reports it).
func TestLaunchAgainAfterARollBackAdoptsThePod(t *testing.T) {
	cs, creates := flakyCreates(busyFirstB())
	e, h := runOn(t, cs)
	ctx := t.Context()
	a, b := transientLaunch("a"), transientLaunch("b")
	if err := accept(t, e, h, []engine.TaskLaunch{a, b}, -1); !errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrOutcomeUnknown) {
		t.Fatalf("Accept with a creation the API server did not take: %v, want ErrUnavailable (rolled back)", err)
	}
	// a's pod runs meanwhile: its executor reports; the scheduler, not holding the task
	// as running, takes the update as an orphan's.
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: a.TaskID, State: tstate.Running}); err != nil {
		t.Fatal(err)
	}
	h.next(t, a.TaskID, tstate.Running)
	if err := accept(t, e, h, []engine.TaskLaunch{a, b}, -1); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	h.next(t, a.TaskID, tstate.Running) // told again, now that the scheduler holds it
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: a.TaskID, State: tstate.Finished, Data: []byte("report")}); err != nil {
		t.Fatal(err)
	}
	if st := h.next(t, a.TaskID, tstate.Finished); string(st.Data) != "report" {
		t.Errorf("FINISHED carries %q, want the executor's report", st.Data)
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("%d pods created, want 2 (a's once, b's)", n)
	}
	pods, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) > 2 {
		t.Errorf("pods %d (%v), want at most 2", len(pods.Items), err)
	}
}

// TestLaunchAgainOfAnEndedPodIsToldItsEnd: the pod of a rolled-back launch ran to its end,
// the scheduler took the end as an orphan's and the pod was deleted, all before the
// scheduler launched the task again: the launch creates no pod, it is told the end the task
// had.
func TestLaunchAgainOfAnEndedPodIsToldItsEnd(t *testing.T) {
	cs, creates := flakyCreates(busyFirstB())
	e, h := runOn(t, cs)
	ctx := t.Context()
	a, b := transientLaunch("a"), transientLaunch("b")
	if err := accept(t, e, h, []engine.TaskLaunch{a, b}, -1); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("Accept with a creation the API server did not take: %v, want ErrUnavailable", err)
	}
	if err := e.Report(ctx, engine.ExecutorReport{TaskID: a.TaskID, State: tstate.Finished, Data: []byte("report")}); err != nil {
		t.Fatal(err)
	}
	h.next(t, a.TaskID, tstate.Finished)
	for { // released: its pod deleted, the task forgotten
		e.mu.Lock()
		gone := e.finished.Has(a.TaskID)
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
	if _, err := cs.CoreV1().Pods("ns").Get(ctx, podName("a", 0, a.TaskID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ended pod not deleted: %v", err)
	}
	if err := accept(t, e, h, []engine.TaskLaunch{a, b}, -1); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	if st := h.next(t, a.TaskID, tstate.Finished); string(st.Data) != "report" {
		t.Errorf("FINISHED carries %q, want the executor's report", st.Data)
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("%d pods created, want 2 (a's once, b's)", n)
	}
}

// TestLostCreateAnswerLeavesTheLaunchToReconciliation: a creation whose answer is lost
// (its pod made) fails the Accept as engine.ErrOutcomeUnknown, not as unavailable: the
// scheduler keeps the launch STAGING instead of rolling it back (a roll-back counted the
// shard as not running, and a trigger's execution of it ran beside the pod made after
// all). Nothing ends either task; the pod made is the task's, and its status is told as
// the informer shows it; no pod is made twice.
func TestLostCreateAnswerLeavesTheLaunchToReconciliation(t *testing.T) {
	e, h, creates, cs := runLossy(t, 1)
	ctx := t.Context()
	ls := []engine.TaskLaunch{transientLaunch("a"), transientLaunch("b")}
	err := accept(t, e, h, ls, -1)
	if !errors.Is(err, engine.ErrOutcomeUnknown) || errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("Accept with a creation's answer lost: err = %v, want ErrOutcomeUnknown alone (left STAGING, not rolled back)", err)
	}
	if n := creates.Load(); n != 2 {
		t.Fatalf("%d pods created, want 2", n)
	}
	pods, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items { // the kubelet runs them
		p := pods.Items[i].DeepCopy()
		p.Status.Phase = corev1.PodRunning
		if _, err := cs.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range ls {
		if st := h.next(t, l.TaskID, tstate.Running); st.Source != tstate.SourceAgent {
			t.Errorf("%s: RUNNING from %s, want the pod's (SOURCE_AGENT)", l.TaskID, st.Source)
		}
	}
	if err := e.Reconcile(ctx, []engine.TaskRef{{TaskID: ls[0].TaskID}, {TaskID: ls[1].TaskID}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		h.next(t, l.TaskID, tstate.Running)
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("%d pods created, want 2", n)
	}
}

// TestCreateErrorsTellAnswersFromLostOnes: which creation errors are the API server's
// refusal (the pod not made, for good), which leave the outcome unknown, and which say the
// request was not taken.
func TestCreateErrorsTellAnswersFromLostOnes(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	dial := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	for _, tc := range []struct {
		name               string
		err                error
		refused, unanswerd bool
	}{
		{"403 quota", apierrors.NewForbidden(gr, "p", errors.New("exceeded quota")), true, false},
		{"422 invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), true, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true, false},
		{"EOF", &url.Error{Op: "Post", URL: "https://a/", Err: io.EOF}, false, true},
		{"connection reset", reset, false, true},
		{"client timeout", &url.Error{Op: "Post", URL: "https://a/", Err: context.DeadlineExceeded}, false, true},
		{"500", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false, true},
		{"504", apierrors.NewTimeoutError("the request did not complete", 0), false, true},
		{"connection refused", dial, false, false},
		{"503", apierrors.NewServiceUnavailable("not ready"), false, false},
	} {
		if got := refused(tc.err); got != tc.refused {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.refused)
		}
		if got := unanswered(tc.err); got != tc.unanswerd {
			t.Errorf("%s: unanswered %v, want %v", tc.name, got, tc.unanswerd)
		}
	}
}

// TestUnreachableAPIServerFailsAcceptAsUnavailable: an Accept whose creations the API
// server could not take (its connection refused, 503, 429) fails with
// engine.ErrUnavailable, so the scheduler waits before launching again (rather than
// retrying such a launch about 20 times a second); one it refused for the pods themselves
// (403: a full quota) does not, nor one whose creations' outcome is unknown (a 500: left
// to reconciliation, not rolled back).
func TestUnreachableAPIServerFailsAcceptAsUnavailable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	refusedConn := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tc := range []struct {
		name          string
		err           error
		down, unknown bool
	}{
		{"connection refused", refusedConn, true, false},
		{"503", apierrors.NewServiceUnavailable("etcd is unavailable"), true, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true, false},
		{"403 quota", apierrors.NewForbidden(gr, "p", errors.New("exceeded quota")), false, false},
		{"500", apierrors.NewServerTimeout(gr, "create", 1), false, true},
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
			if got := errors.Is(err, engine.ErrOutcomeUnknown); got != tc.unknown {
				t.Fatalf("err = %v: ErrOutcomeUnknown %v, want %v", err, got, tc.unknown)
			}
		})
	}
}
