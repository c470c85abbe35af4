package zk

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/store"
)

// TestUrgentCommitsHaveTheirOwnSession: a commit under store.Urgent goes
// on the urgent session and lands while the first session cannot answer
// (standing for a session whose queue is full of the launch loop's
// multis), while a plain commit waits for the first session; the urgent
// commit's writes are read and watched through the first session like any
// other, and its checks (a leader's fence) still refuse it.
func TestUrgentCommitsHaveTheirOwnSession(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.urgent == nil {
		t.Fatal("no urgent session")
	}
	if s.commitConn(ctx) != s.conn || s.commitConn(store.Urgent(ctx)) != s.urgent {
		t.Fatal("commits not routed by urgency")
	}
	events, err := s.Watch(ctx, "/u")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(store.Urgent(ctx), store.Check("/ha/term", store.AnyVersion), store.Put("/u/fenced", nil)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("urgent commit with a failing check: %v, want ErrNotFound", err)
	}
	if err := s.Commit(ctx, store.Put("/ha/term", nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(store.Urgent(ctx), store.Check("/ha/term", store.AnyVersion), store.Put("/u/fire", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Get(ctx, "/u/fire"); err != nil || string(n.Value) != "1" {
		t.Fatalf("urgent write read through the first session: %v %v", n, err)
	}
	untilMarker(ctx, t, events, "/u/fire", 0, func(ev store.Event) {
		if ev.Path == "/u/fenced" {
			t.Fatal("the fenced write was applied")
		}
	})

	// The first session stops answering: its connection goes through a
	// proxy that hangs.
	p := testproxy.NewProxy(t, zkServers(t)[0])
	hung, _, err := zk.Connect([]string{p.Addr()}, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{testLogger(t)}))
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	first := s.conn
	s.conn = hung
	defer func() { s.conn = first }()
	p.Set(testproxy.Hang)
	// As the producer's commits do, it plans from beliefs (the registry
	// copy's): a set at a known version and a create need no read.
	if err := s.Commit(store.Urgent(ctx), store.Set("/u/fire", []byte("2"), 0), store.Create("/u/next", nil)); err != nil {
		t.Fatalf("urgent commit while the first session hangs: %v", err)
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := s.Commit(short, store.Create("/u/plain", nil)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("plain commit while the first session hangs: %v, want it waiting", err)
	}
}

// TestUrgentSessionFollowsTheFirstServer: each new connection of the urgent
// session tries the first session's server first, then goes round the
// others, saying when it has tried them all without connecting.
func TestUrgentSessionFollowsTheFirstServer(t *testing.T) {
	first := "b:2181"
	h := &sameServer{first: func() string { return first }}
	if err := h.Init([]string{"a:2181", "b:2181", "c:2181"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var retry []bool
	for range 5 {
		s, r := h.Next()
		got, retry = append(got, s), append(retry, r)
	}
	if got[0] != "b:2181" || retry[0] {
		t.Fatalf("first try %q (retry %v), want the first session's server", got[0], retry[0])
	}
	if !slices.Contains(got[1:4], "a:2181") || !slices.Contains(got[1:4], "c:2181") {
		t.Fatalf("tries %v do not go round the others", got)
	}
	if retry[2] || !retry[3] {
		t.Fatalf("retry flags %v, want true once every server was tried", retry)
	}
	h.Connected()
	first = "c:2181"
	if s, _ := h.Next(); s != "c:2181" {
		t.Fatalf("after a connection the next try is %q, want the first session's server now", s)
	}
	first = "gone:1"
	h.Connected()
	if s, _ := h.Next(); s == "gone:1" {
		t.Fatal("a server not in the list was tried")
	}
}

// TestUrgentSessionIsOnTheFirstSessionsServer: on the ensemble the urgent
// session connects where the first one did.
func TestUrgentSessionIsOnTheFirstSessionsServer(t *testing.T) {
	all, _ := ensembleNodes(t)
	for range 3 { // the first session's server is random each time
		s := openTest(t, Options{Servers: strings.Split(all, ","), Namespace: uniqueNamespace(t)})
		if s.urgent == nil {
			t.Fatal("no urgent session")
		}
		if u, f := s.urgent.Server(), s.conn.Server(); u != f {
			t.Fatalf("urgent session on %s, the first on %s", u, f)
		}
	}
}
