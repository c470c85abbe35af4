package mesos

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/offers/local"
)

// TestAgainstEmbeddedMaster runs the client against the embedded single-node master.
func TestAgainstEmbeddedMaster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := local.New(local.Config{WorkDir: t.TempDir(), CPUs: 4, MemMB: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })

	h := newRecHandler()
	c := New(Config{URL: cluster.URL(), FrameworkName: "ej-test", BackoffMin: time.Millisecond,
		BackoffMax: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); recv(t, done, "Run") })

	id := recv(t, h.subscribed, "Subscribed")
	if id == "" || c.FrameworkID() != id {
		t.Fatalf("framework id %q / %q", id, c.FrameworkID())
	}
	offers := recv(t, h.offers, "Offers")
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	o := offers[0]
	if o.AgentID != cluster.AgentID() || o.CPUs != 4 || o.MemMB != 2048 {
		t.Fatalf("offer = %+v", o)
	}

	// Explicit reconciliation of a task the master never saw: answered without a uuid.
	if err := c.Reconcile(ctx, []TaskRef{{TaskID: "ghost", AgentID: o.AgentID}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if s := recv(t, h.updates, "Update"); s.TaskID != "ghost" || s.State == "" {
		t.Fatalf("reconcile answer = %+v", s)
	}
	if err := c.Decline(ctx, []string{o.ID}, -1); err != nil {
		t.Fatalf("Decline: %v", err)
	}
	if err := c.Suppress(ctx); err != nil {
		t.Fatalf("Suppress: %v", err)
	}
}
