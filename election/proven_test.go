package election_test

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

// Proven reads at most once per window, reads again once the window has
// passed, ends the term when the read finds the leadership gone, and
// refuses without a read once the lease has lapsed (a leader paused past
// the election and resumed).
func TestProvenSharesReadsAndRefusesAPausedLeader(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var reads atomic.Int32
	var gone atomic.Bool
	still := func(context.Context) error {
		reads.Add(1)
		if gone.Load() {
			return election.ErrNotLeader
		}
		return nil
	}
	const lease, within = 500 * time.Millisecond, 250 * time.Millisecond
	newTerm := func() *election.Term {
		return election.NewLeasedTerm(t.Context(), "/ha/election/n_1", 7, clk, lease, clk.Now(), still)
	}
	ctx := context.Background()

	term := newTerm()
	for range 5 {
		if err := term.Proven(ctx, within); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("five calls in one window made %d reads, want 1", n)
	}
	clk.Advance(within)
	term.Confirm(clk.Now()) // a keepalive: the lease holds
	if err := term.Proven(ctx, within); err != nil || reads.Load() != 2 {
		t.Fatalf("after the window: err %v, reads %d (want nil, 2)", err, reads.Load())
	}

	// A successor was elected while the lease still held here: the next
	// read after the window finds it and ends the term.
	gone.Store(true)
	clk.Advance(within)
	if err := term.Proven(ctx, within); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("leadership gone: err %v, want ErrNotLeader", err)
	}
	if term.Context().Err() == nil {
		t.Fatal("the term did not end when the read found it deposed")
	}

	// Paused past the election: the lease has lapsed, so no read is even
	// made and nothing is allowed.
	gone.Store(false)
	term = newTerm()
	if err := term.Proven(ctx, within); err != nil {
		t.Fatal(err)
	}
	before := reads.Load()
	clk.Advance(2 * time.Second)
	if err := term.Proven(ctx, within); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("resumed after 2s: err %v, want ErrLeaseLapse", err)
	}
	if reads.Load() != before {
		t.Fatal("a lapsed term read the store before refusing")
	}

	// A failed read (no quorum) refuses the act but keeps the term.
	unavailable := errors.New("no quorum")
	failing := election.NewLeasedTerm(t.Context(), "/n", 8, clk, lease, clk.Now(), func(context.Context) error { return unavailable })
	if err := failing.Proven(ctx, within); !errors.Is(err, unavailable) || failing.Context().Err() != nil {
		t.Fatalf("failed read: err %v, ended %v", err, failing.Context().Err())
	}
	// Terms without a linearizable check answer with Valid.
	if err := election.NewTerm(ctx, "/n", 1, clk).Proven(ctx, within); err != nil {
		t.Fatal(err)
	}
}

// A fenced term's lapsed lease refuses acts without ending the term; the
// next confirmation lets it act again; unconfirmed for its hold it ends.
func TestFencedTermSurvivesALapse(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reads := 0
	term := election.NewFencedTerm(t.Context(), "/ha/election/n_1", store.AnyVersion, 9, clk, 500*time.Millisecond, time.Second, clk.Now(),
		func(context.Context) error { reads++; return nil })
	if !term.Fenced() {
		t.Fatal("not fenced")
	}
	clk.Advance(700 * time.Millisecond)
	if err := term.Proven(context.Background(), 125*time.Millisecond); !errors.Is(err, election.ErrLeaseLapse) {
		t.Fatalf("lapsed: %v, want ErrLeaseLapse", err)
	}
	if term.Context().Err() != nil || reads != 0 {
		t.Fatalf("the lapse ended the term (%v) or read (%d)", term.Context().Err(), reads)
	}
	term.Confirm(clk.Now())
	if err := term.Proven(context.Background(), 125*time.Millisecond); err != nil || reads != 1 {
		t.Fatalf("confirmed again: %v, %d reads", err, reads)
	}
	// Unconfirmed for its hold, it ends.
	clk.Advance(time.Second)
	if term.Valid() == nil || !errors.Is(context.Cause(term.Context()), election.ErrLeaseLapse) {
		t.Fatalf("a fenced term unconfirmed past its hold: cause %v, want ErrLeaseLapse", context.Cause(term.Context()))
	}
	lapsing := election.NewLeasedTerm(t.Context(), "/n", 1, clk, 500*time.Millisecond, clk.Now(), nil)
	clk.Advance(time.Second)
	if lapsing.Valid() == nil || lapsing.Context().Err() == nil || lapsing.Fenced() {
		t.Fatal("a leased (ZooKeeper-style) term survived its lapse")
	}
}
