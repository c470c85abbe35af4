package scheduler

import (
	"log/slog"
	"time"
)

// termStart is where a term's time went before its first launch round,
// logged with that round (takeover timelines, docs/cluster.md): the loop's
// turns (events, status updates, reconciliation retries), the rounds that
// launched nothing, how long rounds were held and by what (roundHeld), and
// when the producer's catch-up committed. Wall clock, for the log only;
// only the loop touches it.
type termStart struct {
	began      time.Time
	turns      int
	turnsTook  time.Duration
	rounds     int // rounds that launched nothing
	roundsTook time.Duration
	heldTook   time.Duration
	heldBy     string // what held rounds last
	heldFrom   time.Time
	caughtUp   time.Duration // from began (0: not yet)
	laps       []any         // the last view's parts (view_ready, …), as log attributes
	committed  bool          // the term's first launch commit was logged
	conflicts  int           // launch commits of the term that conflicted before its first
	afterFirst func()        // runs once the term's first launch has committed (freeAfterLoad)
}

// lap notes how long a part of the round's view took (the last round's
// are logged).
func (t *termStart) lap(part string, took time.Duration) {
	t.laps = append(t.laps, slog.Duration("view_"+part, took))
}

func (t *termStart) turn(took time.Duration) {
	t.turns++
	t.turnsTook += took
}

func (t *termStart) round(took time.Duration) {
	t.rounds++
	t.roundsTook += took
}

// held notes whether rounds are held now, and by what.
func (t *termStart) held(by string) {
	now := time.Now()
	if by == "" {
		if !t.heldFrom.IsZero() {
			t.heldTook += now.Sub(t.heldFrom)
			t.heldFrom = time.Time{}
		}
		return
	}
	if t.heldFrom.IsZero() {
		t.heldFrom = now
	}
	t.heldBy = by
}

func (t *termStart) caughtUpNow() {
	if t.caughtUp == 0 && !t.began.IsZero() {
		t.caughtUp = time.Since(t.began)
	}
}

// attrs are the log attributes of the term's way to its first launch.
func (t *termStart) attrs() []any {
	a := append([]any{slog.Int("turns_before", t.turns), slog.Duration("turns_took", t.turnsTook),
		slog.Int("rounds_before", t.rounds), slog.Duration("rounds_took", t.roundsTook),
		slog.Duration("held_for", t.heldTook)}, t.laps...)
	if t.heldBy != "" {
		a = append(a, slog.String("held_by", t.heldBy))
	}
	if t.caughtUp > 0 {
		a = append(a, slog.Duration("catch_up_committed_after", t.caughtUp))
	}
	if !t.began.IsZero() {
		a = append(a, slog.Duration("since_term_start", time.Since(t.began)))
	}
	return a
}
