//go:build e2e

package realkube

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/jobs"
)

// offerLog is an engine.Handler that keeps the offers it is given and drops the rest.
type offerLog struct {
	mu     sync.Mutex
	offers []engine.Offer
}

func (o *offerLog) Subscribed(context.Context, string) {}
func (o *offerLog) Offers(_ context.Context, os []engine.Offer) {
	o.mu.Lock()
	o.offers = append(o.offers, os...)
	o.mu.Unlock()
}
func (o *offerLog) Rescinded(context.Context, string)                               {}
func (o *offerLog) UpdateAsync(_ context.Context, _ engine.Status, done func(bool)) { done(true) }
func (o *offerLog) Message(context.Context, string, string, []byte)                 {}
func (o *offerLog) Failure(context.Context, string, string, *int32)                 {}
func (o *offerLog) Disconnected(context.Context, error)                             {}
func (o *offerLog) take() (engine.Offer, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.offers) == 0 {
		return engine.Offer{}, false
	}
	off := o.offers[len(o.offers)-1]
	o.offers = nil
	return off, true
}

// TestDuplicateLaunchMakesOnePod: two launches of one fire carry one task id, so the Kubernetes
// engine asks the API server twice for the same pod name; the server refuses the second
// (AlreadyExists), the engine takes the existing pod as the task's, and one pod runs.
func TestDuplicateLaunchMakesOnePod(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	eng, err := kube.New(kube.Config{Client: admin, Namespace: ns, ExecutorImage: executorImage, PullPolicy: "Never",
		SchedulerURLs: []string{"http://127.0.0.1:1"}, TaskToken: func(string) string { return "t" }, Clock: clock.Real{}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &offerLog{}
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx, h) }()
	defer func() { cancel(); <-done }()

	id := jobs.FireTaskID("dup", 0, jobs.KindReady, "ready|1", time.Now()).String()
	launch := engine.TaskLaunch{TaskID: id, Name: "dup-0", CPUs: 0.05, MemMB: 16,
		Task: jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "dup", TaskID: id, ShardingTotalCount: 1},
			Job: jobs.Config{JobName: "dup", AppName: "dup-app", ShardingTotalCount: 1}, App: app.Config{AppName: "dup-app", AppURL: "http://127.0.0.1:1/none.tar.gz"}},
		Executor: engine.ExecutorSpec{ID: "dup-app", Name: "dup", CPUs: 0.05, MemMB: 16}}
	accept := func(what string) {
		t.Helper()
		var o engine.Offer
		eventually(t, waitLong, func() bool { var ok bool; o, ok = h.take(); return ok }, "an offer for the %s launch", what)
		l := launch
		l.AgentID = o.AgentID
		if err := eng.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{l}, 0); err != nil {
			t.Fatalf("%s launch: %v", what, err)
		}
	}
	accept("first")
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "dup")) == 1 }, "the first launch's pod")
	first := pods(t, ns, "dup")[0]
	if err := eng.Revive(ctx); err != nil {
		t.Fatal(err)
	}
	accept("second")
	ps := pods(t, ns, "dup")
	if len(ps) != 1 || ps[0].UID != first.UID {
		t.Fatalf("pods after the second launch: %d (want the first launch's %s alone)", len(ps), first.Name)
	}
}
