package election_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/store"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

// deadline bounds every wait; nothing asserts on how long anything took.
const deadline = 30 * time.Second

var seq atomic.Int64

func namespace(t *testing.T) string {
	return fmt.Sprintf("ejtest/election-%d-%d-%s", time.Now().UnixNano(), seq.Add(1),
		strings.NewReplacer("/", "_").Replace(t.Name()))
}

func logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// node is one instance: its own ZooKeeper session (through servers) and
// candidate.
type node struct {
	kv   *zkstore.Store
	cand *election.Candidate
	stop context.CancelFunc
	done chan struct{}
}

func start(t *testing.T, servers, ns, name string, clk clock.Clock, timeout time.Duration) *node {
	t.Helper()
	return startWith(t, servers, ns, name, clk, timeout, nil)
}

// gate holds the candidate's listings while closed, as a paused process
// would.
type gate struct {
	election.Conn
	open atomic.Pointer[chan struct{}]
}

func (g *gate) Children(p string) ([]string, *zk.Stat, error) {
	if ch := g.open.Load(); ch != nil {
		<-*ch
	}
	return g.Conn.Children(p)
}

func startWith(t *testing.T, servers, ns, name string, clk clock.Clock, timeout time.Duration, g *gate) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(servers, ","), Namespace: ns,
		SessionTimeout: timeout, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	sess := kv.Session()
	var conn election.Conn = sess.Conn()
	if g != nil {
		g.Conn = conn
		conn = g
	}
	cand := election.New(election.Config{Conn: conn, Dir: sess.ZPath("/ha/election"), StoreDir: "/ha/election",
		ACL: sess.ACL(), Self: election.Member{ID: name, URL: "http://" + name}, SessionTimeout: timeout,
		Clock: clk, Log: logger().With("node", name)})
	remove := sess.OnState(cand.SessionEvent)
	runCtx, stop := context.WithCancel(context.Background())
	n := &node{kv: kv, cand: cand, stop: stop, done: make(chan struct{})}
	go func() { _ = cand.Run(runCtx); close(n.done) }()
	t.Cleanup(func() { n.close(); remove() })
	return n
}

func (n *node) close() {
	n.stop()
	<-n.done
	_ = n.kv.Close()
}

func waitTerm(t *testing.T, n *node) *election.Term {
	t.Helper()
	for {
		select {
		case term := <-n.cand.Terms():
			if term.Context().Err() == nil {
				return term
			}
		case <-time.After(deadline):
			t.Fatalf("%s: no term within %v", n.cand.Self().ID, deadline)
		}
	}
}

func waitDone(t *testing.T, term *election.Term) error {
	t.Helper()
	select {
	case <-term.Context().Done():
		return context.Cause(term.Context())
	case <-time.After(deadline):
		t.Fatalf("term %s did not end within %v", term.Node(), deadline)
	}
	return nil
}

// TestOneLeaderThenFailover: of two candidates one leads; its fenced
// writes commit; when its session closes the other leads, and a write
// fenced on the old term fails.
func TestOneLeaderThenFailover(t *testing.T) {
	servers, ns := testproxy.ZK(t), namespace(t)
	a := start(t, servers, ns, "a", clock.Real{}, 2*time.Second)
	ta := waitTerm(t, a)
	b := start(t, servers, ns, "b", clock.Real{}, 2*time.Second)
	if lead, ok := waitLeaderKnown(t, b); !ok || lead.ID != "a" {
		t.Fatalf("b sees leader %+v", lead)
	}
	if b.cand.Current() != nil {
		t.Fatal("two leaders")
	}
	ctx := t.Context()
	if err := a.kv.Commit(ctx, append(ta.Fence(), store.Put("/state/x", []byte("a")))...); err != nil {
		t.Fatalf("fenced write of the leader: %v", err)
	}
	members, err := b.cand.Members(ctx)
	if err != nil || len(members) != 2 || members[0].ID != "a" || members[1].ID != "b" {
		t.Fatalf("members %+v %v", members, err)
	}
	a.close() // its session ends: the node goes at once
	tb := waitTerm(t, b)
	if tb.Seq() <= ta.Seq() {
		t.Fatalf("new term seq %d ≤ old %d", tb.Seq(), ta.Seq())
	}
	err = b.kv.Commit(ctx, append(ta.Fence(), store.Put("/state/x", []byte("stale")))...)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write fenced on the old term: %v", err)
	}
	if err := b.kv.Commit(ctx, append(tb.Fence(), store.Put("/state/x", []byte("b")))...); err != nil {
		t.Fatal(err)
	}
}

func waitLeaderKnown(t *testing.T, n *node) (election.Member, bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if m, ok := n.cand.Leader(); ok {
			return m, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return election.Member{}, false
}

// TestSuspensionEndsTermFirst: a leader cut off from ZooKeeper ends its
// term when its connection is suspended, before its session expires and
// another candidate can win; it comes back as a standby.
func TestSuspensionEndsTermFirst(t *testing.T) {
	servers, ns := testproxy.ZK(t), namespace(t)
	proxy := testproxy.NewProxy(t, strings.Split(servers, ",")[0])
	a := start(t, proxy.Addr(), ns, "a", clock.Real{}, 2*time.Second)
	ta := waitTerm(t, a)
	b := start(t, servers, ns, "b", clock.Real{}, 2*time.Second)
	waitLeaderKnown(t, b)
	proxy.Set(testproxy.Hang) // the leader is cut off
	var endedFirst atomic.Bool
	go func() { <-ta.Context().Done(); endedFirst.Store(true) }()
	cause := waitDone(t, ta)
	if !errors.Is(cause, election.ErrSuspended) && !errors.Is(cause, election.ErrLeaseLapse) {
		t.Fatalf("term ended by %v, want a suspension", cause)
	}
	waitTerm(t, b)
	if !endedFirst.Load() {
		t.Fatal("the new leader began before the old term ended")
	}
	if err := ta.Valid(); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("old term still valid: %v", err)
	}
	proxy.Set(testproxy.Forward)
	// a rejoins as a standby behind b.
	end := time.Now().Add(deadline)
	for {
		m, err := b.cand.Members(t.Context())
		if err == nil && len(m) == 2 && m[0].ID == "b" && m[1].ID == "a" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a did not rejoin: %+v %v", m, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a.cand.Current() != nil { // b may have begun a later term (a lease lapse on a loaded machine); a must not lead
		t.Fatal("leadership moved back")
	}
}

// TestLeaseLapse: a leader whose confirmations stop (its clock jumped, as
// after a SIGSTOP) is not valid the instant it looks, and the next
// confirmation begins a new term.
func TestLeaseLapse(t *testing.T) {
	servers, ns := testproxy.ZK(t), namespace(t)
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	g := &gate{}
	a := startWith(t, servers, ns, "a", clk, 3*time.Second, g)
	t1 := waitTerm(t, a)
	if err := t1.Valid(); err != nil {
		t.Fatal(err)
	}
	// Wait until the candidate armed its next check (half a second away;
	// the term's lease watch is at one second).
	for lapse := clk.Now().Add(time.Second); ; <-clk.Changed {
		if at, ok := clk.Pending(); ok && at.Before(lapse) {
			break
		}
	}
	hold := make(chan struct{})
	g.open.Store(&hold)      // its next check stalls, as in a paused process
	clk.Advance(time.Second) // the lease (a third of 3 s) passes unconfirmed
	if err := t1.Valid(); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("after the lease: %v", err)
	}
	if !errors.Is(context.Cause(t1.Context()), election.ErrLeaseLapse) {
		t.Fatalf("term not ended by the lapse: %v", context.Cause(t1.Context()))
	}
	g.open.Store(nil)
	close(hold)
	t2 := waitTerm(t, a) // the check goes through: the candidate leads again
	if t2 == t1 || t2.Valid() != nil {
		t.Fatal("no new valid term after the lapse")
	}
	// ... under a new node: another leadership gets a higher number, and
	// the lapsed term's fenced writes are refused.
	if t2.Seq() <= t1.Seq() || t2.Node() == t1.Node() {
		t.Fatalf("term %d (%s) after term %d (%s): want a new node with a higher number", t2.Seq(), t2.Node(), t1.Seq(), t1.Node())
	}
	if err := a.kv.Commit(t.Context(), append(t1.Fence(), store.Put("/w", []byte("old")))...); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a write behind the lapsed term's fence: %v, want ErrNotFound", err)
	}
	if err := a.kv.Commit(t.Context(), append(t2.Fence(), store.Put("/w", []byte("new")))...); err != nil {
		t.Fatalf("a write of the new term: %v", err)
	}
}

func TestSolo(t *testing.T) {
	s := election.NewSolo(election.Member{ID: "one"}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { _ = s.Run(ctx) }()
	term := <-s.Terms()
	if term.Valid() != nil || term.Fence() != nil || s.Current() != term {
		t.Fatal("solo term not valid or fenced")
	}
	cancel()
	<-term.Context().Done()
	if s.Current() != nil {
		t.Fatal("term outlived its context")
	}
}

// A leased term made outside the package: Confirm extends its lease, its
// lapse ends it, and StillLeads asks the election's check, which ends
// the term when it answers that the leadership is gone but not when it
// fails to answer.
func TestLeasedTermStillLeads(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	var answer atomic.Pointer[error]
	still := func(context.Context) error {
		if e := answer.Load(); e != nil {
			return *e
		}
		return nil
	}
	term := election.NewLeasedTerm(t.Context(), "/ha/election/n_1", 7, clk, time.Second, clk.Now(), still)
	if err := term.StillLeads(t.Context()); err != nil || term.Seq() != 7 || len(term.Fence()) != 1 {
		t.Fatalf("StillLeads = %v, seq %d, fence %v", err, term.Seq(), term.Fence())
	}
	clk.Advance(900 * time.Millisecond)
	term.Confirm(clk.Now())
	clk.Advance(900 * time.Millisecond) // 1.8 s after the start, 0.9 s after the confirmation
	if err := term.Valid(); err != nil {
		t.Fatalf("confirmed term: %v", err)
	}
	unavailable := fmt.Errorf("%w: no quorum", store.ErrUnavailable)
	answer.Store(&unavailable)
	if err := term.StillLeads(t.Context()); !errors.Is(err, store.ErrUnavailable) || term.Context().Err() != nil {
		t.Fatalf("a failed check: %v (term ended: %v)", err, term.Context().Err())
	}
	gone := fmt.Errorf("%w: key gone", election.ErrNotLeader)
	answer.Store(&gone)
	if err := term.StillLeads(t.Context()); !errors.Is(err, election.ErrNotLeader) || term.Context().Err() == nil {
		t.Fatalf("a check that found the leadership gone: %v (term ended: %v)", err, term.Context().Err())
	}

	lapsing := election.NewLeasedTerm(t.Context(), "/ha/election/n_2", 8, clk, time.Second, clk.Now(), nil)
	clk.Advance(time.Second)
	if err := lapsing.StillLeads(t.Context()); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("after the lease: %v", err)
	}
}
