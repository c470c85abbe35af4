package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/store"
)

// A fenced term whose lease renewal comes back late holds an engine call
// until the lease is confirmed again, instead of refusing it (a refused
// ACCEPT cost a leader of the etcd shape its offers in make test).
func TestHoldForProofWaitsOutALateRenewal(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var reads atomic.Int32
	term := election.NewFencedTerm(t.Context(), "/ha/election/n_1", store.AnyVersion, 9, clk, 500*time.Millisecond, time.Second, clk.Now(),
		func(context.Context) error { reads.Add(1); return nil })
	clk.Advance(700 * time.Millisecond)
	if err := term.Proven(t.Context(), 125*time.Millisecond); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("lapsed: %v, want ErrLeaseLapse", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- holdForProof(t.Context(), term, 125*time.Millisecond, time.Millisecond)
	}()
	// The renewal arrives while the call is held.
	term.Confirm(clk.Now())
	if err := <-done; err != nil {
		t.Fatalf("held call after the lease was confirmed again: %v", err)
	}
	if reads.Load() != 1 {
		t.Fatalf("%d proof reads, want 1 (the call is proven by a read, not by the lease alone)", reads.Load())
	}
}

// A call held past its context is refused with the lapse; a held call
// whose term ends is refused as not the leader.
func TestHoldForProofRefusesWhenNothingConfirms(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	term := election.NewFencedTerm(t.Context(), "/ha/election/n_1", store.AnyVersion, 9, clk, 500*time.Millisecond, time.Second, clk.Now(),
		func(context.Context) error { return nil })
	clk.Advance(700 * time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := holdForProof(ctx, term, 125*time.Millisecond, time.Millisecond); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("held past its context: %v, want ErrLeaseLapse", err)
	}

	done := make(chan error, 1)
	go func() { done <- holdForProof(t.Context(), term, 125*time.Millisecond, time.Millisecond) }()
	term.End(election.ErrNotLeader)
	if err := <-done; !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("held while the term ended: %v, want ErrNotLeader", err)
	}

	// A ZooKeeper-style leased term is refused at once, as before.
	leased := election.NewLeasedTerm(t.Context(), "/n", 1, clk, 500*time.Millisecond, clk.Now(), nil)
	clk.Advance(600 * time.Millisecond)
	if err := holdForProof(t.Context(), leased, 125*time.Millisecond, time.Millisecond); err == nil {
		t.Fatal("a lapsed leased term's call was let through")
	}
}
