package mesos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

func TestSubscribeSendsFrameworkInfo(t *testing.T) {
	m := newFakeMaster(t)
	h := newRecHandler()
	c := startClient(t, m, Config{FrameworkName: "ej", User: "alice", Role: "jobs",
		Hostname: "sched-1", Principal: "ej-principal"}, h)
	sub := m.nextSub()
	fi := sub.call.GetSubscribe().GetFrameworkInfo()
	if fi.Name != "ej" || fi.User != "alice" || fi.GetRole() != "jobs" || fi.GetHostname() != "sched-1" ||
		fi.GetPrincipal() != "ej-principal" || !fi.GetCheckpoint() {
		t.Fatalf("framework info = %v", fi)
	}
	if got := fi.GetFailoverTimeout(); got != (7 * 24 * time.Hour).Seconds() {
		t.Errorf("failover_timeout = %v", got)
	}
	if len(fi.Capabilities) != 1 || fi.Capabilities[0].Type != mesos.FrameworkInfo_Capability_PARTITION_AWARE {
		t.Errorf("capabilities = %v", fi.Capabilities)
	}
	if fi.ID != nil || sub.call.FrameworkID != nil {
		t.Errorf("new framework must not send an id: %v / %v", fi.ID, sub.call.FrameworkID)
	}
	sub.send(subscribedEvent("fw-1", 15))
	if got := recv(t, h.subscribed, "Subscribed"); got != "fw-1" {
		t.Fatalf("Subscribed(%q)", got)
	}
	if c.FrameworkID() != "fw-1" {
		t.Fatalf("FrameworkID() = %q", c.FrameworkID())
	}
}

func TestDefaultRoleAndUser(t *testing.T) {
	m := newFakeMaster(t)
	startClient(t, m, Config{}, newRecHandler())
	fi := m.nextSub().call.GetSubscribe().GetFrameworkInfo()
	if fi.GetRole() != "*" || fi.User == "" || fi.Name == "" || !fi.GetCheckpoint() {
		t.Fatalf("defaults not applied (checkpoint on by default): %v", fi)
	}
}

func TestNoCheckpoint(t *testing.T) {
	m := newFakeMaster(t)
	startClient(t, m, Config{NoCheckpoint: true, FailoverTimeout: time.Hour}, newRecHandler())
	fi := m.nextSub().call.GetSubscribe().GetFrameworkInfo()
	if fi.Checkpoint == nil || fi.GetCheckpoint() || fi.GetFailoverTimeout() != 3600 {
		t.Fatalf("checkpoint = %v, failover_timeout = %v; want false and 3600", fi.Checkpoint, fi.GetFailoverTimeout())
	}
}

func TestResubscribeWithKnownAndReplacedID(t *testing.T) {
	m := newFakeMaster(t)
	h := newRecHandler()
	c := startClient(t, m, Config{FrameworkID: "fw-old"}, h)

	sub := m.nextSub()
	if got := sub.call.GetSubscribe().GetFrameworkInfo().GetID().GetValue(); got != "fw-old" {
		t.Fatalf("first SUBSCRIBE id = %q, want the persisted fw-old", got)
	}
	if sub.call.GetFrameworkID().GetValue() != "fw-old" {
		t.Fatalf("call.framework_id = %v", sub.call.FrameworkID)
	}
	sub.send(subscribedEvent("fw-new", 15)) // master assigns a different id
	if got := recv(t, h.subscribed, "Subscribed"); got != "fw-new" || c.FrameworkID() != "fw-new" {
		t.Fatalf("Subscribed(%q), FrameworkID()=%q", got, c.FrameworkID())
	}

	close(sub.end) // the master drops the stream
	if err := recv(t, h.disconnected, "Disconnected"); err == nil {
		t.Fatal("Disconnected without an error")
	}
	sub2 := m.nextSub()
	if got := sub2.call.GetSubscribe().GetFrameworkInfo().GetID().GetValue(); got != "fw-new" {
		t.Fatalf("re-SUBSCRIBE id = %q, want fw-new", got)
	}
	sub2.send(subscribedEvent("fw-new", 15))
	recv(t, h.subscribed, "second Subscribed")
	if err := c.Revive(context.Background()); err != nil {
		t.Fatalf("Revive on the new stream: %v", err)
	}
	if got := m.nextCall(); got.streamID != sub2.streamID {
		t.Fatalf("call used stream %q, want %q", got.streamID, sub2.streamID)
	}
}

func TestCallsFailWhenNotSubscribed(t *testing.T) {
	c := New(Config{URL: "http://127.0.0.1:1"})
	ctx := context.Background()
	for name, err := range map[string]error{
		"revive":    c.Revive(ctx),
		"suppress":  c.Suppress(ctx),
		"kill":      c.Kill(ctx, "t", "a"),
		"reconcile": c.Reconcile(ctx, nil),
		"accept":    c.Accept(ctx, []string{"o"}, nil, 0),
		"decline":   c.Decline(ctx, []string{"o"}, 0),
	} {
		if !errors.Is(err, ErrNotSubscribed) {
			t.Errorf("%s: err = %v, want ErrNotSubscribed", name, err)
		}
	}
}

func TestHeartbeatTimeoutResubscribes(t *testing.T) {
	m := newFakeMaster(t)
	h := newRecHandler()
	c := startClient(t, m, Config{HeartbeatGrace: 1}, h)
	sub := m.nextSub()
	sub.send(subscribedEvent("fw-1", 0.005)) // then silence: no heartbeat within 2×5ms
	recv(t, h.subscribed, "Subscribed")
	if err := recv(t, h.disconnected, "Disconnected"); !errors.Is(err, ErrHeartbeat) {
		t.Fatalf("Disconnected(%v), want ErrHeartbeat", err)
	}
	sub2 := m.nextSub()
	if got := sub2.call.GetSubscribe().GetFrameworkInfo().GetID().GetValue(); got != "fw-1" {
		t.Fatalf("re-SUBSCRIBE id = %q", got)
	}
	if err := c.Revive(context.Background()); !errors.Is(err, ErrNotSubscribed) {
		t.Fatalf("Revive before SUBSCRIBED on the new stream: %v", err)
	}
}

func TestErrorEventStartsOverAsNewFramework(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{FrameworkID: "fw-1"}, "fw-1")
	sub.send(`{"type":"ERROR","error":{"message":"Framework has been removed"}}`)
	if err := recv(t, h.disconnected, "Disconnected"); !errors.Is(err, ErrMasterError) {
		t.Fatalf("Disconnected(%v), want ErrMasterError", err)
	}
	sub2 := m.nextSub()
	if id := sub2.call.GetSubscribe().GetFrameworkInfo().GetID(); id != nil {
		t.Fatalf("re-SUBSCRIBE after removal sent id %v, want none", id)
	}
	sub2.send(subscribedEvent("fw-2", 15))
	if got := recv(t, h.subscribed, "Subscribed"); got != "fw-2" || c.FrameworkID() != "fw-2" {
		t.Fatalf("Subscribed(%q)", got)
	}
}

func TestErrorFailedOverKeepsID(t *testing.T) {
	m, _, h, sub := subscribe(t, Config{}, "fw-1")
	sub.send(`{"type":"ERROR","error":{"message":"Framework failed over"}}`)
	recv(t, h.disconnected, "Disconnected")
	if got := m.nextSub().call.GetSubscribe().GetFrameworkInfo().GetID().GetValue(); got != "fw-1" {
		t.Fatalf("re-SUBSCRIBE id = %q, want fw-1", got)
	}
}

func TestSubscribeFollowsRedirectToLeader(t *testing.T) {
	m := newFakeMaster(t)
	leader := strings.TrimPrefix(m.srv.URL, "http:")
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", leader+schedulerPath)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(follower.Close)

	h := newRecHandler()
	cfg := Config{URL: follower.URL, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond}
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); recv(t, done, "Run") })

	sub := m.nextSub()
	sub.send(subscribedEvent("fw-1", 15))
	recv(t, h.subscribed, "Subscribed")
	if err := c.Suppress(ctx); err != nil {
		t.Fatalf("Suppress after redirect: %v", err)
	}
	if got := m.nextCall(); got.streamID != sub.streamID {
		t.Fatalf("call not sent to the leader with its stream id: %+v", got)
	}
}

func TestUnsubscribedCallDropsStream(t *testing.T) {
	m, c, h, _ := subscribe(t, Config{}, "fw-1")
	m.setReject(func(*scheduler.Call) int { return http.StatusForbidden })
	if err := c.Revive(context.Background()); err == nil {
		t.Fatal("Revive: want error on 403")
	}
	m.nextCall()
	recv(t, h.disconnected, "Disconnected")
	m.nextSub()
}

func TestBackoffBounds(t *testing.T) {
	c := New(Config{URL: "http://x", BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second})
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		for range 20 {
			if d := c.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := c.backoff(1000); d > time.Second {
		t.Fatalf("backoff overflow: %v", d)
	}
}

func TestRunRejectsInvalidURL(t *testing.T) {
	for _, u := range []string{"", "not a url"} {
		if err := New(Config{URL: u}).Run(context.Background(), newRecHandler()); err == nil {
			t.Errorf("Run with URL %q: want error", u)
		}
	}
}
