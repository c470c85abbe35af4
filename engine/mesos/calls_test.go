package mesos

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/engine"
)

func TestCallsCarryStreamAndFrameworkID(t *testing.T) {
	m, c, _, sub := subscribe(t, Config{}, "fw-1")
	ctx := context.Background()
	steps := []struct {
		do    func() error
		typ   scheduler.Call_Type
		check func(*scheduler.Call) bool
	}{
		{func() error { return c.Suppress(ctx) }, scheduler.Call_SUPPRESS, nil},
		{func() error { return c.Revive(ctx) }, scheduler.Call_REVIVE, nil},
		{func() error { return c.Kill(ctx, "t1", "a1") }, scheduler.Call_KILL, func(call *scheduler.Call) bool {
			k := call.GetKill()
			return k.TaskID.Value == "t1" && k.GetAgentID().GetValue() == "a1"
		}},
		{func() error { return c.Reconcile(ctx, nil) }, scheduler.Call_RECONCILE, func(call *scheduler.Call) bool {
			return call.Reconcile != nil && len(call.Reconcile.Tasks) == 0
		}},
		{func() error {
			return c.Reconcile(ctx, []engine.TaskRef{{TaskID: "t1", AgentID: "a1"}, {TaskID: "t2"}})
		}, scheduler.Call_RECONCILE, func(call *scheduler.Call) bool {
			ts := call.GetReconcile().Tasks
			return len(ts) == 2 && ts[0].TaskID.Value == "t1" && ts[0].GetAgentID().GetValue() == "a1" &&
				ts[1].TaskID.Value == "t2" && ts[1].AgentID == nil
		}},
		{func() error { return c.Shutdown(ctx, "e1", "a1") }, scheduler.Call_SHUTDOWN, func(call *scheduler.Call) bool {
			s := call.GetShutdown()
			return s.ExecutorID.Value == "e1" && s.AgentID.Value == "a1"
		}},
		{func() error { return c.SendMessage(ctx, "a1", "e1", []byte("hi")) }, scheduler.Call_MESSAGE, func(call *scheduler.Call) bool {
			msg := call.GetMessage()
			return msg.AgentID.Value == "a1" && msg.ExecutorID.Value == "e1" && string(msg.Data) == "hi"
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.typ, err)
		}
		rec := m.nextCall()
		if rec.call.Type != s.typ || rec.streamID != sub.streamID || rec.call.GetFrameworkID().GetValue() != "fw-1" {
			t.Fatalf("%s: got %s (stream %q) %s", s.typ, rec.call.Type, rec.streamID, rec.raw)
		}
		if s.check != nil && !s.check(&rec.call) {
			t.Errorf("%s: wrong body %s", s.typ, rec.raw)
		}
	}
}

func TestRefuseFilterDefaults(t *testing.T) {
	c := New(Config{URL: "http://x", RefuseSeconds: 7})
	for refuse, want := range map[time.Duration]float64{0: 7, -1: 0, 90 * time.Second: 90} {
		if got := c.filters(refuse).GetRefuseSeconds(); got != want {
			t.Errorf("filters(%v) = %v, want %v", refuse, got, want)
		}
	}
}

func TestUpdateAckedOnlyAfterHandlerSuccess(t *testing.T) {
	m, _, h, sub := subscribe(t, Config{}, "fw-1")
	h.setUpdateErr(func(s engine.Status) error {
		if s.TaskID == "bad" {
			return errors.New("store down")
		}
		return nil
	})
	sub.send(
		`{"type":"UPDATE","update":{"status":{"task_id":{"value":"bad"},"state":"TASK_RUNNING","agent_id":{"value":"a1"},"uuid":"AAECAwQFBgcICQoLDA0ODw=="}}}`,
		`{"type":"UPDATE","update":{"status":{"task_id":{"value":"recon"},"state":"TASK_LOST","source":"SOURCE_MASTER","reason":"REASON_RECONCILIATION"}}}`,
		`{"type":"UPDATE","update":{"status":{"task_id":{"value":"good"},"state":"TASK_FINISHED","agent_id":{"value":"a1"},
		  "executor_id":{"value":"e1"},"message":"done","source":"SOURCE_EXECUTOR","reason":"REASON_COMMAND_EXECUTOR_FAILED",
		  "data":"aGk=","timestamp":1700000000.25,"healthy":true,"uuid":"EBESExQVFhcYGRobHB0eHw=="}}}`)
	for _, want := range []string{"bad", "recon", "good"} {
		if s := recv(t, h.updates, "Update"); s.TaskID != want {
			t.Fatalf("Update(%q), want %q", s.TaskID, want)
		}
	}
	ack := m.nextCall() // the first (and only) call must be the ack of "good"
	a := ack.call.GetAcknowledge()
	if ack.call.Type != scheduler.Call_ACKNOWLEDGE || a.TaskID.Value != "good" || a.AgentID.Value != "a1" ||
		len(a.UUID) != 16 || a.UUID[0] != 0x10 || ack.streamID != sub.streamID {
		t.Fatalf("ack = %s", ack.raw)
	}
	m.noCall()
}

func TestStatusConversion(t *testing.T) {
	var ev event
	raw := `{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_FAILED","agent_id":{"value":"a1"},
	  "executor_id":{"value":"e1"},"message":"exit 2","source":"SOURCE_EXECUTOR","reason":"REASON_COMMAND_EXECUTOR_FAILED",
	  "data":"aGk=","timestamp":1700000000.25,"healthy":false}}}`
	if err := ev.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	s := toStatus(ev.GetUpdate().Status, &ev)
	if s.TaskID != "t" || s.State != "TASK_FAILED" || s.AgentID != "a1" || s.ExecutorID != "e1" ||
		s.Message != "exit 2" || s.Source != "SOURCE_EXECUTOR" || s.Reason != "REASON_COMMAND_EXECUTOR_FAILED" ||
		string(s.Data) != "hi" || s.Healthy == nil || *s.Healthy ||
		!s.Timestamp.Equal(time.Unix(1700000000, 250e6)) {
		t.Fatalf("status = %+v", s)
	}
}

func TestMessageAndFailureEvents(t *testing.T) {
	_, _, h, sub := subscribe(t, Config{}, "fw-1")
	sub.send(
		`{"type":"MESSAGE","message":{"agent_id":{"value":"a1"},"executor_id":{"value":"e1"},"data":"QkVHSU4="}}`,
		`{"type":"FAILURE","failure":{"agent_id":{"value":"a1"},"executor_id":{"value":"e1"},"status":137}}`,
		`{"type":"FAILURE","failure":{"agent_id":{"value":"a2"}}}`,
		`{"type":"HEARTBEAT"}`)
	if got := recv(t, h.messages, "Message"); got != "a1/e1/BEGIN" {
		t.Fatalf("Message = %q", got)
	}
	for _, want := range []string{"a1/e1/137", "a2//nil"} {
		if got := recv(t, h.failures, "Failure"); got != want {
			t.Fatalf("Failure = %q, want %q", got, want)
		}
	}
}

// An ACCEPT whose connection closed without an answer may have been carried out (a real
// master killed after it launched the tasks): its error says the
// outcome is unknown, so the scheduler leaves the tasks to reconciliation instead of launching
// them again. An answer of the master's (400) is a plain failure.
func TestAcceptWithoutAnAnswerHasAnUnknownOutcome(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{}, "fw-1")
	m.setReject(func(call *scheduler.Call) int {
		if call.Type == scheduler.Call_ACCEPT && call.GetAccept().OfferIDs[0].Value == "o1" {
			return dropConnection
		}
		return http.StatusBadRequest
	})
	for _, id := range []string{"o1", "o2"} {
		sub.send(offerWithExecutor(id))
		recv(t, h.offers, "Offers")
	}
	err := c.Accept(context.Background(), []string{"o1"}, []engine.TaskLaunch{testLaunch("t1", 1)}, 0)
	if !errors.Is(err, engine.ErrOutcomeUnknown) {
		t.Fatalf("connection closed under the ACCEPT: err = %v, want ErrOutcomeUnknown", err)
	}
	m.nextCall()
	err = c.Accept(context.Background(), []string{"o2"}, []engine.TaskLaunch{testLaunch("t2", 1)}, 0)
	if err == nil || errors.Is(err, engine.ErrOutcomeUnknown) || errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("ACCEPT answered 400: err = %v, want a plain failure", err)
	}
}

// An ACCEPT the master could not take (503: it cannot serve now) was not carried out, and
// the master is unavailable: the scheduler backs its launches off (engine.ErrUnavailable).
// A connection refused is the same; an answer of the master's that refuses the call is not.
func TestAcceptOfAnUnavailableMasterIsUnavailable(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{}, "fw-1")
	m.setReject(func(call *scheduler.Call) int {
		if call.Type == scheduler.Call_ACCEPT {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	sub.send(offerWithExecutor("o1"))
	recv(t, h.offers, "Offers")
	err := c.Accept(context.Background(), []string{"o1"}, []engine.TaskLaunch{testLaunch("t1", 1)}, 0)
	if !errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrOutcomeUnknown) {
		t.Fatalf("ACCEPT answered 503: err = %v, want ErrUnavailable", err)
	}
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:5050/api/v1/scheduler",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	if !masterDown(refused) || masterDown(apierrors.CodeMalformedRequest.Error("bad")) || !masterDown(apierrors.CodeRateLimitExceeded.Error("slow")) {
		t.Fatal("masterDown tells an unavailable master from an answer wrongly")
	}
}
