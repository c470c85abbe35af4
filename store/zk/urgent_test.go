package zk

import (
	"context"
	"errors"
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
