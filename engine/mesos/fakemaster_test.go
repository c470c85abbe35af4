package mesos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/engine"
)

// waitFor bounds every wait in these tests; nothing sleeps, tests block on channels.
const waitFor = 5 * time.Second

// fakeMaster is a scripted Mesos master: SUBSCRIBE opens a RecordIO stream fed by the test,
// every other call is recorded and answered 202 (or with reject's status).
type fakeMaster struct {
	t      *testing.T
	srv    *httptest.Server
	subs   chan *subscription
	calls  chan recorded
	mu     sync.Mutex
	seq    int
	reject func(*scheduler.Call) int // optional: HTTP status for a non-SUBSCRIBE call
	// refuse, when set, answers every SUBSCRIBE with this status (and counts it in refusals).
	refuse   int
	refusals chan string // the Authorization header of each refused SUBSCRIBE
	// operator, when set, answers the operator API (POST /api/v1); operatorCalls counts them.
	operator      func() string
	operatorCalls int
}

// dropConnection, returned by reject, closes the call's connection without an answer (a
// master killed after it read the call).
const dropConnection = -1

type subscription struct {
	call     scheduler.Call
	auth     string // Authorization header
	streamID string
	events   chan string   // JSON events to send
	end      chan struct{} // close to end the stream
}

type recorded struct {
	call     scheduler.Call
	auth     string
	streamID string
	raw      string
}

func newFakeMaster(t *testing.T) *fakeMaster {
	t.Helper()
	m := &fakeMaster{t: t, subs: make(chan *subscription, 16), calls: make(chan recorded, 128), refusals: make(chan string, 128)}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeMaster) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/api/v1" {
		m.mu.Lock()
		op := m.operator
		m.operatorCalls++
		m.mu.Unlock()
		if op == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, op())
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != schedulerPath {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var call scheduler.Call
	if err := json.Unmarshal(body, &call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if call.Type == scheduler.Call_SUBSCRIBE {
		m.stream(w, r, call)
		return
	}
	m.calls <- recorded{call: call, auth: r.Header.Get("Authorization"), streamID: r.Header.Get(headerStreamID), raw: string(body)}
	status := http.StatusAccepted
	m.mu.Lock()
	reject := m.reject
	m.mu.Unlock()
	if reject != nil {
		if s := reject(&call); s != 0 {
			status = s
		}
	}
	if status == dropConnection {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.WriteHeader(status)
}

func (m *fakeMaster) stream(w http.ResponseWriter, r *http.Request, call scheduler.Call) {
	m.mu.Lock()
	m.seq++
	sub := &subscription{call: call, auth: r.Header.Get("Authorization"), streamID: fmt.Sprintf("stream-%d", m.seq),
		events: make(chan string, 64), end: make(chan struct{})}
	refuse := m.refuse
	m.mu.Unlock()
	if refuse != 0 {
		select {
		case m.refusals <- sub.auth:
		default:
		}
		http.Error(w, "refused by the test", refuse)
		return
	}
	// Like Mesos: Content-Type is the accepted codec, the chunked body is RecordIO.
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		http.Error(w, "Expecting 'Accept' to allow application/json", http.StatusNotAcceptable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(headerStreamID, sub.streamID)
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	m.subs <- sub
	for {
		select {
		case ev := <-sub.events:
			fmt.Fprintf(w, "%d\n%s", len(ev), ev)
			w.(http.Flusher).Flush()
		case <-sub.end:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (m *fakeMaster) setReject(f func(*scheduler.Call) int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reject = f
}

func (m *fakeMaster) setOperator(f func() string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.operator = f
}

func (m *fakeMaster) operatorCallCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.operatorCalls
}

func (m *fakeMaster) setRefuse(status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refuse = status
}

func (m *fakeMaster) nextSub() *subscription {
	m.t.Helper()
	return recv(m.t, m.subs, "SUBSCRIBE")
}

func (m *fakeMaster) nextCall() recorded {
	m.t.Helper()
	return recv(m.t, m.calls, "call")
}

// noCall asserts that no call has been recorded so far.
func (m *fakeMaster) noCall() {
	m.t.Helper()
	select {
	case c := <-m.calls:
		m.t.Fatalf("unexpected call %s: %s", c.call.Type, c.raw)
	default:
	}
}

func (s *subscription) send(events ...string) {
	for _, e := range events {
		s.events <- e
	}
}

func subscribedEvent(id string, heartbeat float64) string {
	return fmt.Sprintf(`{"type":"SUBSCRIBED","subscribed":{"framework_id":{"value":%q},"heartbeat_interval_seconds":%g}}`, id, heartbeat)
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// recHandler records handler calls on channels.
type recHandler struct {
	subscribed   chan string
	offers       chan []engine.Offer
	rescinded    chan string
	updates      chan engine.Status
	messages     chan string
	failures     chan string
	disconnected chan error

	mu        sync.Mutex
	updateErr func(engine.Status) error
}

func (h *recHandler) setUpdateErr(f func(engine.Status) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updateErr = f
}

func newRecHandler() *recHandler {
	return &recHandler{
		subscribed: make(chan string, 16), offers: make(chan []engine.Offer, 16),
		rescinded: make(chan string, 16), updates: make(chan engine.Status, 16),
		messages: make(chan string, 16), failures: make(chan string, 16),
		disconnected: make(chan error, 16),
	}
}

func (h *recHandler) Subscribed(_ context.Context, id string)    { h.subscribed <- id }
func (h *recHandler) Offers(_ context.Context, o []engine.Offer) { h.offers <- o }
func (h *recHandler) Rescinded(_ context.Context, id string)     { h.rescinded <- id }
func (h *recHandler) UpdateAsync(_ context.Context, s engine.Status, done func(bool)) {
	h.updates <- s
	h.mu.Lock()
	f := h.updateErr
	h.mu.Unlock()
	done(f == nil || f(s) == nil)
}
func (h *recHandler) Message(_ context.Context, agent, executor string, data []byte) {
	h.messages <- agent + "/" + executor + "/" + string(data)
}
func (h *recHandler) Failure(_ context.Context, agent, executor string, status *int32) {
	s := "nil"
	if status != nil {
		s = fmt.Sprint(*status)
	}
	h.failures <- agent + "/" + executor + "/" + s
}
func (h *recHandler) Disconnected(_ context.Context, err error) { h.disconnected <- err }

// startClient runs a client against m until the test ends.
func startClient(t *testing.T, m *fakeMaster, cfg Config, h engine.Handler) *Client {
	t.Helper()
	if cfg.Detector == nil {
		cfg.URL = m.srv.URL
	}
	cfg.BackoffMin, cfg.BackoffMax = time.Millisecond, max(cfg.BackoffMax, 2*time.Millisecond)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := recv(t, done, "Run to return"); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return c
}

// subscribe starts a client and completes its first subscription with framework id fid.
func subscribe(t *testing.T, cfg Config, fid string) (*fakeMaster, *Client, *recHandler, *subscription) {
	t.Helper()
	m := newFakeMaster(t)
	h := newRecHandler()
	c := startClient(t, m, cfg, h)
	sub := m.nextSub()
	sub.send(subscribedEvent(fid, 15))
	if got := recv(t, h.subscribed, "Subscribed"); got != fid {
		t.Fatalf("Subscribed(%q), want %q", got, fid)
	}
	return m, c, h, sub
}
