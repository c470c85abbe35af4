//go:build e2e

package realkube

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// lostAnswer sends the first pod creation to the API server and loses its answer (the
// leader cut off from the API server while it creates).
type lostAnswer struct {
	next http.RoundTripper
	lost *atomic.Int32
}

func (l lostAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/pods") || !l.lost.CompareAndSwap(0, 1) {
		return l.next.RoundTrip(req)
	}
	resp, err := l.next.RoundTrip(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return nil, errors.New("lostAnswer: the connection was lost before the answer")
}

// updateLog keeps the offers and the status updates it is given.
type updateLog struct {
	offerLog
	mu      sync.Mutex
	updates []engine.Status
}

func (u *updateLog) UpdateAsync(_ context.Context, st engine.Status, done func(bool)) {
	u.mu.Lock()
	u.updates = append(u.updates, st)
	u.mu.Unlock()
	done(true)
}

// since returns the updates of task id from the n-th on.
func (u *updateLog) since(n int, id string) []engine.Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []engine.Status
	for _, st := range u.updates[min(n, len(u.updates)):] {
		if st.TaskID == id {
			out = append(out, st)
		}
	}
	return out
}

// terminal returns the first terminal update of id from the n-th update on.
func (u *updateLog) terminal(n int, id string) (engine.Status, bool) {
	for _, st := range u.since(n, id) {
		if st.State.Terminal() {
			return st, true
		}
	}
	return engine.Status{}, false
}

// TestLostCreateAnswerRunsThePodOnce: a pod creation whose answer is lost fails the launch
// (the pod was created all the same). The pod runs to its end (its executor's report),
// the scheduler, not holding the task as running, takes the end as an orphan's, and the
// pod is deleted. The launch again under the same task id, as the scheduler makes
// it, creates no second pod: the engine answers with the end the task had. (With a new
// id, or a second pod, the shard would run twice.)
func TestLostCreateAnswerRunsThePodOnce(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Int32
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return lostAnswer{next: rt, lost: &lost} })
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := kube.New(kube.Config{Client: client, Namespace: ns, ExecutorImage: executorImage, PullPolicy: "Never",
		SchedulerURLs: []string{"http://127.0.0.1:1"}, TaskToken: func(string) string { return "t" }, Clock: clock.Real{}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &updateLog{}
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx, h) }()
	defer func() { cancel(); <-done }()

	id := jobs.FireTaskID("lost", 0, jobs.KindReady, "ready|1", time.Now()).String()
	launch := engine.TaskLaunch{TaskID: id, Name: "lost-0", CPUs: 0.05, MemMB: 16,
		Task: jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "lost", TaskID: id, ShardingTotalCount: 1},
			Job: jobs.Config{JobName: "lost", AppName: "lost-app", ShardingTotalCount: 1}, App: app.Config{AppName: "lost-app", AppURL: "http://127.0.0.1:1/none.tar.gz"}},
		Executor: engine.ExecutorSpec{ID: "lost-app", Name: "lost", CPUs: 0.05, MemMB: 16}}
	accept := func(what string) error {
		t.Helper()
		var o engine.Offer
		eventually(t, waitLong, func() bool { var ok bool; o, ok = h.take(); return ok }, "an offer for the %s launch", what)
		l := launch
		l.AgentID = o.AgentID
		return eng.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{l}, 0)
	}
	if err := accept("first"); err == nil || lost.Load() != 1 {
		t.Fatalf("the first launch, its answer lost: %v (answers lost: %d)", err, lost.Load())
	}
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "lost")) == 1 }, "the first launch's pod")
	// Its executor reports its end (as the scheduler's API hands the engine the report).
	if err := eng.Report(ctx, engine.ExecutorReport{TaskID: id, State: task.Finished}); err != nil {
		t.Fatal(err)
	}
	var end engine.Status
	eventually(t, waitLong, func() bool { var ok bool; end, ok = h.terminal(0, id); return ok }, "the pod's end to be told")
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "lost")) == 0 }, "the ended pod to be deleted")
	if err := eng.Revive(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	n := len(h.updates)
	h.mu.Unlock()
	if err := accept("second"); err != nil {
		t.Fatalf("the launch again: %v", err)
	}
	if ps := pods(t, ns, "lost"); len(ps) != 0 {
		t.Fatalf("the launch again created pod %s: the shard runs twice", ps[0].Name)
	}
	var again engine.Status
	eventually(t, waitLong, func() bool { var ok bool; again, ok = h.terminal(n, id); return ok }, "the end told again")
	if again.State != end.State {
		t.Errorf("told %s again, the pod ended %s", again.State, end.State)
	}
}
