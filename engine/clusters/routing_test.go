package clusters

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/task"
)

// fakeTerm records the calls routed to one cluster; its handler is the composition's.
type fakeTerm struct {
	mu     sync.Mutex
	calls  []string
	h      engine.Handler
	ready  chan struct{}
	agents []engine.Agent
	agErr  error
	caps   map[string]engine.NamespaceCap
	takes  int // engine.Capabilities.Accepts
	bound  int // engine.Capabilities.RoundTasks
}

func newFake(agents ...string) *fakeTerm {
	f := &fakeTerm{ready: make(chan struct{})}
	for _, a := range agents {
		f.agents = append(f.agents, engine.Agent{ID: a, CPUs: 4, MemMB: 4096})
	}
	return f
}

func (f *fakeTerm) note(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }

func (f *fakeTerm) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func (f *fakeTerm) Run(ctx context.Context, h engine.Handler) error {
	f.h = h
	close(f.ready)
	<-ctx.Done()
	return nil
}

func (f *fakeTerm) Accept(_ context.Context, offerIDs []string, ls []engine.TaskLaunch, _ time.Duration) error {
	f.note("accept " + offerIDs[0] + " " + ls[0].TaskID + "@" + ls[0].AgentID)
	return nil
}
func (f *fakeTerm) Decline(_ context.Context, ids []string, _ time.Duration) error {
	f.note("decline " + ids[0])
	return nil
}
func (f *fakeTerm) Suppress(context.Context) error { f.note("suppress"); return nil }
func (f *fakeTerm) Revive(context.Context) error   { f.note("revive"); return nil }
func (f *fakeTerm) Kill(_ context.Context, id, agent string) error {
	f.note("kill " + id + "@" + agent)
	return nil
}
func (f *fakeTerm) Reconcile(_ context.Context, refs []engine.TaskRef) error {
	s := "reconcile"
	for _, r := range refs {
		s += " " + r.TaskID + "@" + r.AgentID
	}
	f.note(s)
	return nil
}
func (f *fakeTerm) Shutdown(_ context.Context, exec, agent string) error {
	f.note("shutdown " + exec + "@" + agent)
	return nil
}
func (f *fakeTerm) Capabilities() engine.Capabilities {
	return engine.Capabilities{ExecutorSharing: true, Accepts: f.takes, RoundTasks: f.bound}
}
func (f *fakeTerm) NamespaceCaps([]string) map[string]engine.NamespaceCap {
	return f.caps
}
func (f *fakeTerm) Agents(context.Context) ([]engine.Agent, error) { return f.agents, f.agErr }

// sink is the scheduler's handler in these tests.
type sink struct {
	mu     sync.Mutex
	events []string
	fw     string
	added  chan struct{} // a token after each event (for events sent off the caller's goroutine)
}

func (s *sink) add(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.added <- struct{}{}:
	default:
	}
}
func (s *sink) took() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	return out
}
func (s *sink) Subscribed(_ context.Context, id string) { s.add("subscribed " + id) }
func (s *sink) Offers(_ context.Context, os []engine.Offer) {
	for _, o := range os {
		s.add("offer " + o.ID + " on " + o.AgentID)
	}
}
func (s *sink) Rescinded(_ context.Context, id string) { s.add("rescinded " + id) }
func (s *sink) UpdateAsync(_ context.Context, st engine.Status, done func(bool)) {
	line := "update " + st.TaskID + " " + string(st.State) + " on " + st.AgentID
	if st.LostCluster != "" {
		line += " (cluster " + st.LostCluster + " lost)"
	}
	s.add(line)
	done(true)
}
func (s *sink) Message(_ context.Context, agent, exec string, _ []byte) {
	s.add("message " + exec + " on " + agent)
}
func (s *sink) Failure(_ context.Context, agent, exec string, _ *int32) {
	s.add("failure " + exec + " on " + agent)
}
func (s *sink) Disconnected(_ context.Context, err error) { s.add("disconnected") }

// twoClusters composes dc1 (home) and dc2, runs them, and subscribes both.
func twoClusters(t *testing.T) (*Engine, *fakeTerm, *fakeTerm, *sink) {
	t.Helper()
	a, b := newFake("agent-1"), newFake("agent-1")
	e, err := New([]Member{{Name: "dc1", Term: a}, {Name: "dc2", Term: b}}, clock.NewFake(time.Unix(0, 0)), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &sink{added: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	<-a.ready
	<-b.ready
	a.h.Subscribed(ctx, "fw-a")
	b.h.Subscribed(ctx, "fw-b")
	if got := h.took(); !reflect.DeepEqual(got, []string{"subscribed dc1=fw-a", "subscribed dc1=fw-a,dc2=fw-b"}) {
		t.Fatalf("subscriptions: %q", got)
	}
	return e, a, b, h
}

func want(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestSameLocalIDsStayApart: two clusters hand out the same offer and agent ids; the
// scheduler sees them apart, and each call reaches the cluster its ids name, with its
// own ids.
func TestSameLocalIDsStayApart(t *testing.T) {
	e, a, b, h := twoClusters(t)
	ctx := context.Background()
	a.h.Offers(ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", CPUs: 1, MemMB: 1}})
	b.h.Offers(ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1", CPUs: 1, MemMB: 1}})
	want(t, "offers", h.took(), []string{"offer dc1:o1 on dc1:agent-1", "offer dc2:o1 on dc2:agent-1"})

	if err := e.Accept(ctx, []string{"dc2:o1"}, []engine.TaskLaunch{{TaskID: "t1", AgentID: "dc2:agent-1"}}, -1); err != nil {
		t.Fatal(err)
	}
	if err := e.Decline(ctx, []string{"dc1:o1"}, time.Second); err != nil {
		t.Fatal(err)
	}
	want(t, "dc1's calls", a.took(), []string{"decline o1"})
	want(t, "dc2's calls", b.took(), []string{"accept o1 t1@agent-1"})

	b.h.UpdateAsync(ctx, engine.Status{TaskID: "t1", AgentID: "agent-1", State: task.Running}, func(bool) {})
	b.h.Message(ctx, "agent-1", "app@-@dc2:agent-1", nil)
	b.h.Failure(ctx, "agent-1", "", nil)
	want(t, "events", h.took(), []string{"update t1 TASK_RUNNING on dc2:agent-1", "message app@-@dc2:agent-1 on dc2:agent-1", "failure  on dc2:agent-1"})

	_ = e.Kill(ctx, "t1", "dc2:agent-1")
	_ = e.Kill(ctx, "t1", "") // no agent recorded: the cluster it was launched on
	_ = e.Kill(ctx, "old", "agent-9")
	_ = e.Shutdown(ctx, "app@-@dc2:agent-1", "dc2:agent-1")
	_ = e.Reconcile(ctx, []engine.TaskRef{{TaskID: "t1", AgentID: "dc2:agent-1"}, {TaskID: "old", AgentID: "agent-9"}})
	_ = e.Reconcile(ctx, nil)
	want(t, "dc1's calls", a.took(), []string{"kill old@agent-9", "reconcile old@agent-9", "reconcile"})
	want(t, "dc2's calls", b.took(), []string{"kill t1@agent-1", "kill t1@", "shutdown app@-@dc2:agent-1@agent-1", "reconcile t1@agent-1", "reconcile"})
}

// TestCallsAcrossClustersRefused: one ACCEPT is of one agent; offers of two clusters, or
// a launch on another cluster's agent, or a cluster not configured, are refused.
func TestCallsAcrossClustersRefused(t *testing.T) {
	e, a, b, _ := twoClusters(t)
	ctx := context.Background()
	if err := e.Accept(ctx, []string{"dc1:o1", "dc2:o1"}, []engine.TaskLaunch{{TaskID: "t", AgentID: "dc1:x"}}, -1); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("offers of two clusters: %v", err)
	}
	if err := e.Accept(ctx, []string{"dc1:o1"}, []engine.TaskLaunch{{TaskID: "t", AgentID: "dc2:x"}}, -1); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("a launch on another cluster's agent: %v", err)
	}
	if err := e.Kill(ctx, "t", "dc9:x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a cluster not configured: %v", err)
	}
	want(t, "calls", append(a.took(), b.took()...), nil)
}

// TestLostClusterIsolated: a cluster that disconnects takes its offers with it, and the
// scheduler stays connected while another cluster is; its agents leave the inventory
// when they cannot be read.
func TestLostClusterIsolated(t *testing.T) {
	e, a, b, h := twoClusters(t)
	ctx := context.Background()
	a.h.Offers(ctx, []engine.Offer{{ID: "o1", AgentID: "agent-1"}})
	b.h.Offers(ctx, []engine.Offer{{ID: "o2", AgentID: "agent-1"}, {ID: "o3", AgentID: "agent-2"}})
	if err := e.Accept(ctx, []string{"dc2:o3"}, []engine.TaskLaunch{{TaskID: "t1", AgentID: "dc2:agent-2"}}, -1); err != nil {
		t.Fatal(err)
	}
	b.h.UpdateAsync(ctx, engine.Status{TaskID: "t0", AgentID: "agent-1", State: task.Running}, func(bool) {}) // of an earlier term
	h.took()
	b.took()
	b.h.Disconnected(ctx, errors.New("eof"))
	// Its tasks are unreachable from now: the scheduler counts them lost past its bound.
	want(t, "dc2 lost", h.took(), []string{"rescinded dc2:o2", "update t0 TASK_UNREACHABLE on dc2:agent-1 (cluster dc2 lost)",
		"update t1 TASK_UNREACHABLE on dc2:agent-2 (cluster dc2 lost)"})
	_ = e.Revive(ctx)
	want(t, "revive", append(a.took(), b.took()...), []string{"revive"})
	// A reconciliation of a task on dc2 while it is away is answered the same, without
	// asking dc2; dc1's are asked of dc1.
	select { // the events so far are taken
	case <-h.added:
	default:
	}
	if err := e.Reconcile(ctx, []engine.TaskRef{{TaskID: "t9", AgentID: "dc2:agent-9"}, {TaskID: "a1", AgentID: "dc1:agent-1"}}); err != nil {
		t.Fatal(err)
	}
	want(t, "reconcile with dc2 away", append(a.took(), b.took()...), []string{"reconcile a1@agent-1"})
	<-h.added // the answer is sent off the caller's goroutine
	want(t, "reconciled while away", h.took(), []string{"update t9 TASK_UNREACHABLE on dc2:agent-9 (cluster dc2 lost)"})

	b.agErr = errors.New("connection refused")
	as, err := e.Agents(ctx)
	if err != nil || len(as) != 1 || as[0].ID != "dc1:agent-1" {
		t.Errorf("agents with dc2 unreadable: %v, %v", as, err)
	}
	hs := e.Health()
	if !hs[0].Connected || hs[1].Connected || hs[1].LastError != "eof" {
		t.Errorf("health: %+v", hs)
	}

	a.h.Disconnected(ctx, errors.New("eof"))
	want(t, "both lost", h.took(), []string{"rescinded dc1:o1", "disconnected"})
	a.agErr = errors.New("connection refused")
	if _, err := e.Agents(ctx); err == nil {
		t.Error("agents with no cluster readable: no error")
	}
	b.h.Subscribed(ctx, "fw-b2")
	want(t, "dc2 back", h.took(), []string{"subscribed dc1=fw-a,dc2=fw-b2"})
}

func TestFrameworkIDs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"abc-0001", map[string]string{"dc1": "abc-0001"}}, // a single engine's, from before
		{"dc1=a,dc2=b", map[string]string{"dc1": "a", "dc2": "b"}},
	} {
		if got := FrameworkIDs(c.in, "dc1"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("FrameworkIDs(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestNamespaceCapsOnlyWhereEveryClusterCaps(t *testing.T) {
	a, b := newFake(), newFake()
	a.caps = map[string]engine.NamespaceCap{"ns1": {Capped: true, CPUs: 2, MemMB: 100, Name: "q1"}, "ns2": {Capped: true, CPUs: 1, Name: "q2"}}
	b.caps = map[string]engine.NamespaceCap{"ns1": {Capped: true, CPUs: 3, MemMB: 50, Name: "q3"}}
	e, err := New([]Member{{Name: "k1", Term: a}, {Name: "k2", Term: b}}, clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	got := e.NamespaceCaps([]string{"ns1", "ns2"})
	if len(got) != 1 || got["ns1"].CPUs != 5 || got["ns1"].MemMB != 150 || !got["ns1"].Capped {
		t.Errorf("caps: %+v", got)
	}
}

func TestNewRefusesBadLists(t *testing.T) {
	f := newFake()
	for _, ms := range [][]Member{nil, {{Name: "Bad_Name", Term: f}}, {{Name: "a", Term: f}, {Name: "a", Term: f}}, {{Name: "a"}}} {
		if _, err := New(ms, clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			t.Errorf("New(%v): no error", ms)
		}
	}
}

// TestLanesPerCluster: each cluster's ACCEPTs are a lane of their own, of as many in
// flight as that cluster takes, while the clusters together declare the fewest (for a
// launcher that reads no lanes); an agent of no configured cluster is alone, one at a time.
func TestLanesPerCluster(t *testing.T) {
	e, a, b, _ := twoClusters(t)
	a.takes, b.takes = 8, 0
	for _, c := range []struct {
		agent, lane string
		n           int
	}{{"dc1:agent-1", "dc1", 8}, {"agent-1", "dc1", 8}, {"dc2:agent-1", "dc2", 1}} {
		if lane, n := e.Lane(c.agent); lane != c.lane || n != c.n {
			t.Errorf("Lane(%s) = %s, %d; want %s, %d", c.agent, lane, n, c.lane, c.n)
		}
	}
	if lane, n := e.Lane("dc9:x"); n != 1 || lane == "dc1" || lane == "dc2" {
		t.Errorf("Lane of a cluster not configured = %s, %d; want a lane of its own, 1", lane, n)
	}
	if n := e.Capabilities().InFlight(); n != 1 {
		t.Errorf("together: %d in flight, want the fewest, 1", n)
	}
}

// TestRoundTasksPerCluster: each cluster bounds a round's tasks on it as its engine
// declares; together they declare none (the round reads each cluster's).
func TestRoundTasksPerCluster(t *testing.T) {
	e, _, b, _ := twoClusters(t)
	b.bound = 50
	if n1, n2, n9 := e.RoundTasks("dc1"), e.RoundTasks("dc2"), e.RoundTasks("dc9"); n1 != 0 || n2 != 50 || n9 != 0 {
		t.Errorf("RoundTasks dc1 %d, dc2 %d, dc9 (not configured) %d; want 0, 50, 0", n1, n2, n9)
	}
	if n := e.Capabilities().RoundTasks; n != 0 {
		t.Errorf("together: RoundTasks %d, want 0", n)
	}
}
