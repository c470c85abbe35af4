package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/executor/fakeagent"
)

// failsafe bounds every wait so a bug fails the test instead of hanging it.
const failsafe = 20 * time.Second

type harness struct {
	agent  *fakeagent.Agent
	pipe   *Pipeline
	done   chan error
	cancel context.CancelFunc // ends Run's context, as SIGTERM does
}

func start(t *testing.T, autoAck bool, opt Options) *harness {
	t.Helper()
	return startWith(t, autoAck, opt, nil)
}

// startWith is start with the pipeline adjusted by setup.
func startWith(t *testing.T, autoAck bool, opt Options, setup func(*Pipeline)) *harness {
	t.Helper()
	pipe := newPipeline(t, "PIDDIR="+t.TempDir())
	if setup != nil {
		setup(pipe)
	}
	h := startRunner(t, autoAck, opt, pipe)
	h.pipe = pipe
	return h
}

// startRunner starts an executor with runner against a fake agent. Unless
// opt says otherwise it sends TASK_STARTING at once for every task, so the
// tests' update sequences do not depend on how fast a task starts.
func startRunner(t *testing.T, autoAck bool, opt Options, runner Runner) *harness {
	t.Helper()
	return startCodec(t, autoAck, opt, runner, false)
}

// startCodec is startRunner speaking protobuf to the agent, or JSON.
func startCodec(t *testing.T, autoAck bool, opt Options, runner Runner, protobuf bool) *harness {
	t.Helper()
	a := fakeagent.New(autoAck)
	t.Cleanup(a.Close)
	opt.FrameworkID, opt.ExecutorID, opt.BackoffMin = "fw-1", "app@-@agent-1", time.Millisecond
	if opt.StartingAfter == 0 {
		opt.StartingAfter = -1
	}
	h := &harness{agent: a, done: make(chan error, 1)}
	ex := New(NewHTTPAgent(a.Endpoint(), opt.FrameworkID, opt.ExecutorID, "", protobuf), runner, opt)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.cancel = cancel
	go func() { h.done <- ex.Run(ctx) }()
	sub := h.next(t)
	if sub.Type != executor.Call_SUBSCRIBE || sub.FrameworkID.Value != "fw-1" || sub.ExecutorID.Value != "app@-@agent-1" {
		t.Fatalf("first call %+v", sub)
	}
	a.Send(fakeagent.Subscribed())
	return h
}

func (h *harness) next(t *testing.T) *executor.Call {
	t.Helper()
	select {
	case c := <-h.agent.Calls:
		return c
	case <-time.After(failsafe):
		t.Fatal("no call from the executor")
		return nil
	}
}

// updates collects n UPDATE calls.
func (h *harness) updates(t *testing.T, n int) []*executor.Call_Update {
	t.Helper()
	var out []*executor.Call_Update
	for len(out) < n {
		c := h.next(t)
		if c.Type != executor.Call_UPDATE {
			t.Fatalf("call %v, want UPDATE", c.Type)
		}
		if len(c.Update.Status.UUID) != 16 || c.Update.Status.GetSource() != mesos.SOURCE_EXECUTOR {
			t.Fatalf("bad status %+v", c.Update.Status)
		}
		out = append(out, c.Update)
	}
	return out
}

func (h *harness) exit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(failsafe):
		t.Fatal("executor did not exit")
		return nil
	}
}

func states(us []*executor.Call_Update) string {
	var s []string
	for _, u := range us {
		s = append(s, u.Status.TaskID.Value+":"+u.Status.State.String())
	}
	return strings.Join(s, " ")
}

// gateRunner starts a task once its gate is open, then finishes it.
type gateRunner struct{ gate chan struct{} }

func (g gateRunner) Run(ctx context.Context, _ string, _ []byte, h Hooks) Outcome {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return Outcome{State: Killed}
	}
	h.Running()
	return Outcome{State: Finished}
}

// TestStartingOnlyWhenSlowToStart: a task that starts within
// StartingAfter goes from STAGING straight to RUNNING; one that takes
// longer (its app still being fetched) is reported STARTING first.
func TestStartingOnlyWhenSlowToStart(t *testing.T) {
	open := make(chan struct{})
	close(open)
	h := startRunner(t, true, Options{StartingAfter: time.Hour}, gateRunner{open})
	h.agent.Send(fakeagent.Launch("fast", nil))
	if got := states(h.updates(t, 2)); got != "fast:TASK_RUNNING fast:TASK_FINISHED" {
		t.Fatalf("a task that started at once: %s", got)
	}

	gate := make(chan struct{})
	h = startRunner(t, true, Options{StartingAfter: time.Millisecond}, gateRunner{gate})
	h.agent.Send(fakeagent.Launch("slow", nil))
	if got := states(h.updates(t, 1)); got != "slow:TASK_STARTING" {
		t.Fatalf("a task slow to start: %s", got)
	}
	close(gate)
	if got := states(h.updates(t, 2)); got != "slow:TASK_RUNNING slow:TASK_FINISHED" {
		t.Fatalf("after it started: %s", got)
	}
}

func TestLaunchRunsToFinished(t *testing.T) {
	h := start(t, true, Options{})
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho \"item $ELASTICJOB_SHARDING_ITEM\"\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 1, nil)))
	us := h.updates(t, 3)
	if got := states(us); got != "t1:TASK_STARTING t1:TASK_RUNNING t1:TASK_FINISHED" {
		t.Fatalf("updates %s", got)
	}
	if string(us[0].Status.UUID) == string(us[1].Status.UUID) || string(us[1].Status.UUID) == string(us[2].Status.UUID) {
		t.Fatal("uuid reused")
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(h.pipe.Sandbox, "tasks", "t1", "stdout")); got != "item 1\n" {
		t.Fatalf("stdout %q", got)
	}
}

// TestProtobufToAnAgentThatAsksForIt: told to, the executor speaks
// protobuf (its calls, and the events it reads) through a task's whole
// life: its updates with their reports, the acknowledgements, SHUTDOWN.
func TestProtobufToAnAgentThatAsksForIt(t *testing.T) {
	pipe := newPipeline(t, "PIDDIR="+t.TempDir())
	h := startCodec(t, true, Options{}, pipe, true)
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho \"item $ELASTICJOB_SHARDING_ITEM\"\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 1, nil)))
	us := h.updates(t, 3)
	if got := states(us); got != "t1:TASK_STARTING t1:TASK_RUNNING t1:TASK_FINISHED" {
		t.Fatalf("updates %s", got)
	}
	var rep Report
	if err := json.Unmarshal(us[2].Status.Data, &rep); err != nil || rep.StartTime == nil || rep.CompleteTime == nil || rep.ExitCode == nil || *rep.ExitCode != 0 {
		t.Fatalf("final report %s: %v", us[2].Status.Data, err)
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err) // it exits once every update is acknowledged
	}
	if got := readFile(t, filepath.Join(pipe.Sandbox, "tasks", "t1", "stdout")); got != "item 1\n" {
		t.Fatalf("stdout %q", got)
	}
	for _, ct := range h.agent.ContentTypes() {
		// Calls that queued while a request was in flight go as one batch, a RecordIO of
		// protobuf calls.
		if ct != "application/x-protobuf" && ct != "application/recordio (application/x-protobuf)" {
			t.Fatalf("calls' Content-Types %v, want protobuf only", h.agent.ContentTypes())
		}
	}
}

func TestKillAndSiblingIsolation(t *testing.T) {
	h := start(t, true, Options{})
	url := scriptURL(t, "run.sh", "#!/bin/sh\ncase $ELASTICJOB_SHARDING_ITEM in\n0) exec sleep 1000;;\n1) echo bad >&2; exit 3;;\nesac\n")
	h.agent.Send(fakeagent.Launch("sleeper", taskData(url, "run.sh", 0, nil)))
	h.agent.Send(fakeagent.Launch("failer", taskData(url, "run.sh", 1, nil)))
	final := map[string]*executor.Call_Update{}
	for len(final) < 2 {
		u := h.updates(t, 1)[0]
		switch st := u.Status.GetState(); {
		case st == mesos.TASK_RUNNING && u.Status.TaskID.Value == "sleeper":
			h.agent.Send(fakeagent.Kill("sleeper", int64(time.Second)))
		case st != mesos.TASK_STARTING && st != mesos.TASK_RUNNING:
			final[u.Status.TaskID.Value] = u
		}
	}
	if u := final["failer"]; u.Status.GetState() != mesos.TASK_FAILED || u.Status.GetMessage() != "exit code 3: bad" {
		t.Fatalf("failer: %v %q", u.Status.GetState(), u.Status.GetMessage())
	}
	if u := final["sleeper"]; u.Status.GetState() != mesos.TASK_KILLED {
		t.Fatalf("sleeper: %v %q", u.Status.GetState(), u.Status.GetMessage())
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownExitsOnceFinalUpdatesAreAccepted: on SHUTDOWN the executor
// kills its tasks and exits as soon as the agent has accepted (202) their
// final updates, without waiting for acknowledgements that may never come
// (AckTimeout and the shutdown grace period here are an hour).
func TestShutdownExitsOnceFinalUpdatesAreAccepted(t *testing.T) {
	h := start(t, false, Options{AckTimeout: time.Hour, ShutdownGrace: time.Hour, KillGrace: time.Second})
	url := scriptURL(t, "run.sh", "#!/bin/sh\nexec sleep 1000\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 0, nil)))
	us := h.updates(t, 2) // STARTING, RUNNING
	h.agent.Send(fakeagent.Shutdown())
	us = append(us, h.updates(t, 1)...)
	if got := states(us); got != "t1:TASK_STARTING t1:TASK_RUNNING t1:TASK_KILLED" {
		t.Fatalf("updates %s", got)
	}
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownBoundWhenUpdatesCannotBeDelivered: stopped by its signal
// (context) while the agent is unreachable, the executor gives up on its
// final updates after min(AckTimeout, ShutdownGrace/2).
func TestShutdownBoundWhenUpdatesCannotBeDelivered(t *testing.T) {
	h := start(t, true, Options{AckTimeout: time.Hour, ShutdownGrace: 400 * time.Millisecond, RecoveryTimeout: time.Hour})
	url := scriptURL(t, "run.sh", "#!/bin/sh\nexec sleep 1000\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 0, nil)))
	h.updates(t, 2)
	h.agent.Close()
	h.cancel()
	// With AckTimeout an hour, only the shutdown bound lets it exit before
	// exit's failsafe.
	if err := h.exit(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestAckWaitIsBounded(t *testing.T) {
	h := start(t, false, Options{AckTimeout: 10 * time.Millisecond})
	h.agent.Send(fakeagent.Launch("t1", taskData(scriptURL(t, "ok.sh", "#!/bin/sh\n"), "ok.sh", 0, nil)))
	h.updates(t, 3)
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

func TestResubscribeResendsUnacknowledged(t *testing.T) {
	h := start(t, false, Options{})
	h.agent.Send(fakeagent.Launch("t1", taskData(scriptURL(t, "ok.sh", "#!/bin/sh\n"), "ok.sh", 0, nil)))
	us := h.updates(t, 3)
	h.agent.Disconnect()
	sub := h.next(t)
	if sub.Type != executor.Call_SUBSCRIBE {
		t.Fatalf("call %v, want SUBSCRIBE", sub.Type)
	}
	var resent []*executor.Call_Update
	for i := range sub.Subscribe.UnacknowledgedUpdates {
		resent = append(resent, &sub.Subscribe.UnacknowledgedUpdates[i])
	}
	if states(resent) != states(us) || len(sub.Subscribe.UnacknowledgedTasks) != 1 {
		t.Fatalf("re-subscribed with updates %s, %d tasks", states(resent), len(sub.Subscribe.UnacknowledgedTasks))
	}
	h.agent.Send(fakeagent.Subscribed())
	for _, u := range us {
		h.agent.Send(fakeagent.Ack(u))
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

// An agent that never comes back: the executor keeps its task running for
// the whole recovery timeout (15 minutes of an injected clock, re-trying
// all along), then kills it and exits with ErrAgentGone. No orphan lives
// for ever.
func TestAgentGoneForTheRecoveryTimeout(t *testing.T) {
	const timeout = 15 * time.Minute
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := start(t, true, Options{RecoveryTimeout: timeout, BackoffMax: time.Minute, Clock: clk})
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho $$ > \"$PIDDIR/pid\"\nexec sleep 1000\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 0, nil)))
	h.updates(t, 2)
	env := lookup(h.pipe.Env)
	pid, _ := strconv.Atoi(strings.TrimSpace(awaitFile(t, filepath.Join(env("PIDDIR"), "pid"))))
	lost := clk.Now()
	h.agent.Close()
	retries := 0
	for {
		select {
		case err := <-h.done:
			if away := clk.Now().Sub(lost); away < timeout {
				t.Fatalf("executor exited after %v without the agent, before the recovery timeout: %v", away, err)
			} else if !errors.Is(err, ErrAgentGone) {
				t.Fatalf("err = %v, want ErrAgentGone", err)
			}
			if running(pid) {
				t.Fatalf("task %d still running after the executor gave up", pid)
			}
			if retries < 10 {
				t.Fatalf("%d attempts to reach the agent, want it retried all along", retries)
			}
			return
		case <-clk.Changed: // the executor waits before its next attempt
		case <-time.After(failsafe):
			t.Fatal("the executor neither retried nor exited")
		}
		at, ok := clk.Pending()
		if !ok {
			continue
		}
		if !running(pid) {
			t.Fatalf("task %d killed after %v without the agent, before the recovery timeout", pid, clk.Now().Sub(lost))
		}
		retries++
		clk.Set(at)
	}
}

// awaitFile returns the content of a file a task writes, once it has.
func awaitFile(t *testing.T, path string) string {
	t.Helper()
	end := time.Now().Add(failsafe)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return string(b)
		}
		if time.Now().After(end) {
			t.Fatalf("%s not written", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTolerantDecoding(t *testing.T) {
	var ev executor.Event
	launch := `{"type":"LAUNCH","launch":{"task":{"name":"t","task_id":{"value":"t1"},"agent_id":{"value":"a"},
		"data":"eyJ9","kill_policy":{"grace_period":{"nanoseconds":7}},"resources":[{"name":"cpus","type":"FUTURE_TYPE"}]}}}`
	if err := unmarshalTolerant([]byte(launch), &ev); err != nil {
		t.Fatal(err)
	}
	if l := ev.GetLaunch(); l == nil || l.Task.TaskID.Value != "t1" || string(l.Task.Data) != `{"}` || l.Task.KillPolicy.GracePeriod.Nanoseconds != 7 {
		t.Fatalf("%+v", ev)
	}
	sub := `{"type":"SUBSCRIBED","subscribed":{"framework_info":{"user":"u","name":"n","capabilities":[{"type":"FUTURE_CAP"},{}]},"agent_info":{"hostname":"h"},"executor_info":{"executor_id":{"value":"e"}}}}`
	if err := unmarshalTolerant([]byte(sub), &ev); err != nil || ev.Type != executor.Event_SUBSCRIBED {
		t.Fatalf("%v %+v", err, ev)
	}
}

func TestIdleExecutorExitsAfterItsLastTask(t *testing.T) {
	h := start(t, true, Options{IdleTimeout: 0})
	url := scriptURL(t, "run.sh", "#!/bin/sh\nexit 0\n")
	h.agent.Send(fakeagent.Launch("t1", taskData(url, "run.sh", 1, nil)))
	if got := states(h.updates(t, 3)); got != "t1:TASK_STARTING t1:TASK_RUNNING t1:TASK_FINISHED" {
		t.Fatalf("updates %s", got)
	}
	// No SHUTDOWN: the executor leaves on its own once idle and acknowledged.
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

// stubbornRunner runs every task until its gate opens, whatever the kill.
type stubbornRunner struct{ gate chan struct{} }

func (s stubbornRunner) Run(_ context.Context, _ string, _ []byte, h Hooks) Outcome {
	h.Running()
	<-s.gate
	return Outcome{State: Finished}
}

// TestLaunchWhileShuttingDownIsRefusedAsNeverStarted: a task that arrives
// while the executor shuts down fails at once with
// REASON_EXECUTOR_TERMINATED, which tells the scheduler the task never
// began (and may run elsewhere).
func TestLaunchWhileShuttingDownIsRefusedAsNeverStarted(t *testing.T) {
	gate := make(chan struct{})
	h := startRunner(t, true, Options{StartingAfter: time.Hour, KillGrace: time.Hour}, stubbornRunner{gate})
	h.agent.Send(fakeagent.Launch("t1", nil))
	if got := states(h.updates(t, 1)); got != "t1:TASK_RUNNING" {
		t.Fatalf("updates %s", got)
	}
	h.agent.Send(fakeagent.Shutdown())
	h.agent.Send(fakeagent.Launch("t2", nil))
	us := h.updates(t, 1)
	if got := states(us); got != "t2:TASK_FAILED" || us[0].Status.GetReason() != mesos.REASON_EXECUTOR_TERMINATED {
		t.Fatalf("launch while shutting down: %s, reason %v", got, us[0].Status.GetReason())
	}
	close(gate)
	if got := states(h.updates(t, 1)); got != "t1:TASK_FINISHED" {
		t.Fatalf("updates %s", got)
	}
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}
