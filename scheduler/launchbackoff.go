package scheduler

import (
	"time"
)

// A launch whose ACCEPT failed is rolled back (launcher.rollback): its
// executions are queued again under the same task ids, and the re-queue
// wakes the launcher. When the ACCEPT failed because the engine could not
// be reached (engine.ErrUnavailable: a Mesos master that refused the
// connection or answered 503 / 429, a Kubernetes API server that refused
// the connection or answered 429 or 503), the next round would fail the same way, and
// the engine offers the same resources again at once (Kubernetes re-offers
// a node an Accept left): the launcher retried a 4-pod launch about 20
// times a second for as long as the API server was down, each time a
// commit, an API request, a roll-back and a re-queue. So after such a round the launcher backs off: until the wait
// has passed, its rounds ask nothing of the engine (no ACCEPT, DECLINE,
// REVIVE or kill; the offers held are kept), and every entry that could
// launch waits with queue.WaitUnavailable (round.View.Unavailable). The
// wait doubles from backoffFirst to backoffMax with each round that finds
// the engine unavailable again. An ACCEPT that succeeds, or a new
// subscription to the engine (it answers again), ends the backoff. Nothing
// else starts one: an engine that answers (a refusal, a stale offer) is
// retried at the next round as before, and an ACCEPT with no answer
// (engine.ErrOutcomeUnknown) is left to reconciliation, not re-queued. A
// term starts with no backoff, so a healthy engine's takeover launch is
// not held by it.
const (
	backoffFirst = 100 * time.Millisecond
	backoffMax   = 2 * time.Second
)

// engineBackoff is the launcher's wait after rounds whose ACCEPTs found
// the engine unavailable (zero: none).
type engineBackoff struct {
	wait   time.Duration // the last wait (0: no backoff)
	until  time.Time     // no round before
	last   time.Time     // when the last round found the engine unavailable
	since  time.Time     // the streak's first such round
	rounds int           // the streak's rounds
}

// failed notes a round that found the engine unavailable at now and
// returns the wait before the next.
func (b *engineBackoff) failed(now time.Time) time.Duration {
	if b.wait == 0 {
		b.wait, b.since = backoffFirst, now
	} else {
		b.wait = min(2*b.wait, backoffMax)
	}
	b.until, b.last = now.Add(b.wait), now
	b.rounds++
	return b.wait
}

// reset ends the backoff and reports the streak it ended (rounds 0: none).
func (b *engineBackoff) reset() (rounds int, since time.Time) {
	rounds, since = b.rounds, b.since
	*b = engineBackoff{}
	return rounds, since
}

// holds reports whether rounds wait at now, and until when: a backoff
// stands and has not passed, and the engine has not been subscribed to
// since its last failure (subscribedAt; a new subscription ends it).
func (b *engineBackoff) holds(now, subscribedAt time.Time) (time.Time, bool) {
	if b.wait == 0 {
		return time.Time{}, false
	}
	if subscribedAt.After(b.last) {
		b.reset()
		return time.Time{}, false
	}
	return b.until, now.Before(b.until)
}
