//go:build e2e

package realmesos

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// recorder is an engine.Handler that keeps the offers and status updates it is given.
type recorder struct {
	mu      sync.Mutex
	offers  []engine.Offer
	updates []engine.Status
}

func (r *recorder) Subscribed(context.Context, string) {}
func (r *recorder) Offers(_ context.Context, os []engine.Offer) {
	r.mu.Lock()
	r.offers = append(r.offers, os...)
	r.mu.Unlock()
}
func (r *recorder) Rescinded(context.Context, string) {}
func (r *recorder) UpdateAsync(_ context.Context, s engine.Status, done func(bool)) {
	r.mu.Lock()
	r.updates = append(r.updates, s)
	r.mu.Unlock()
	done(true)
}
func (r *recorder) Message(context.Context, string, string, []byte) {}
func (r *recorder) Failure(context.Context, string, string, *int32) {}
func (r *recorder) Disconnected(context.Context, error)             {}
func (r *recorder) takeOffer() (engine.Offer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.offers) == 0 {
		return engine.Offer{}, false
	}
	o := r.offers[0]
	r.offers = r.offers[1:]
	return o, true
}
func (r *recorder) update(id string, st task.State) (engine.Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.TaskID == id && u.State == st {
			return u, true
		}
	}
	return engine.Status{}, false
}

// TestDuplicateTaskIDRefusedByMesos: real Mesos 1.11 refuses a second launch of a task id the
// framework has active, on another offer (TASK_ERROR, REASON_TASK_INVALID, "Task has duplicate
// ID"), which is what the scheduler's fire ids (jobs.FireTaskID, no agent in them) rely on and
// what task.DuplicateLaunch recognises.
func TestDuplicateTaskIDRefusedByMesos(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mesos.New(mesos.Config{URL: m.masterURL(), Logger: slog.New(slog.DiscardHandler), NoCheckpoint: true, FailoverTimeout: time.Second})
	rec := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Run(ctx, rec) }()
	defer func() { cancel(); <-done }()

	id := jobs.FireTaskID("dup", 0, jobs.KindReady, "ready|1", time.Now()).String()
	launch := engine.TaskLaunch{TaskID: id, Name: "dup-0", CPUs: 0.1, MemMB: 32,
		Task:     jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "dup", TaskID: id, ShardingTotalCount: 1}},
		Executor: engine.ExecutorSpec{ID: "dup-app@-@x", Name: "dup", CPUs: 0.1, MemMB: 32, Command: "sleep 60", Shell: true}}
	accept := func(what string) {
		t.Helper()
		var o engine.Offer
		eventually(t, waitLong, func() bool { var ok bool; o, ok = rec.takeOffer(); return ok }, "an offer for the %s launch", what)
		l := launch
		l.AgentID = o.AgentID
		l.Executor.ID = jobs.ExecutorID("dup-app", o.AgentID)
		if err := client.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{l}, 0); err != nil {
			t.Fatalf("%s ACCEPT: %v", what, err)
		}
	}
	accept("first")
	eventually(t, waitLong, func() bool { return len(framework(t, m, "elasticjob-cloud").Tasks) > 0 }, "the first launch to be active at the master")
	accept("second")
	var st engine.Status
	eventually(t, waitLong, func() bool { var ok bool; st, ok = rec.update(id, task.Error); return ok }, "the master to refuse the second launch")
	if !strings.HasPrefix(st.Message, "Task has duplicate ID") || st.Reason != task.ReasonTaskInvalid || st.Source != task.SourceMaster {
		t.Fatalf("refusal %+v, want TASK_ERROR REASON_TASK_INVALID from the master, \"Task has duplicate ID\"", st)
	}
	if !task.DuplicateLaunch(task.Update{State: st.State, Reason: st.Reason, Source: st.Source, Message: st.Message}) {
		t.Fatalf("task.DuplicateLaunch does not recognise %+v", st)
	}
	if n := len(framework(t, m, "elasticjob-cloud").Tasks); n != 1 {
		t.Fatalf("the master holds %d tasks of the framework, want the first launch's one", n)
	}
}
