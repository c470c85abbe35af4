package election_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
)

// TestLeaseWatchEndsAnUnconfirmedTerm: a leased term's own watch ends it
// the moment its lease lapses unconfirmed, with nothing asking Valid, and
// each confirmation moves that moment to a lease after the confirmed
// check's send time. In a synctest bubble the real clock is the bubble's,
// so the lapse is checked to the nanosecond without the test waiting, and
// synctest.Wait says the watch is parked on its timer.
func TestLeaseWatchEndsAnUnconfirmedTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		start := time.Now()
		term := election.NewLeasedTerm(context.Background(), "/ha/election/n_1", 3, clock.Real{}, lease, start, nil)
		time.Sleep(900 * time.Millisecond)
		sent := time.Now().Add(-100 * time.Millisecond) // a renewal sent at 0.8 s, answered at 0.9 s
		term.Confirm(sent)
		time.Sleep(sent.Add(lease).Sub(time.Now()) - time.Nanosecond)
		synctest.Wait()
		if err := term.Context().Err(); err != nil {
			t.Fatalf("ended %v after the start, within the lease of its last confirmation: %v", time.Since(start), context.Cause(term.Context()))
		}
		if err := term.Valid(); err != nil {
			t.Fatalf("within the lease: %v", err)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if cause := context.Cause(term.Context()); !errors.Is(cause, election.ErrLeaseLapse) {
			t.Fatalf("at the lapse (%v after the start): cause %v, want ErrLeaseLapse", time.Since(start), cause)
		}
		if got := time.Since(start); got != 1800*time.Millisecond {
			t.Fatalf("the lapse came %v after the start, want 1.8 s (0.8 s + the lease)", got)
		}
	})
}
