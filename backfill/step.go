package backfill

import (
	"slices"
	"time"
)

// Outcome is what became of a run in flight.
type Outcome int

// Outcomes.
const (
	Pending   Outcome = iota // queued or running
	Succeeded                // ended, every shard succeeded
	FailedRun                // ended with a shard failed
	Unseen                   // neither queued, running nor ended (this pass)
)

// View is what Step is told of the registry this pass.
type View struct {
	Now time.Time
	// Outcome is what became of the run keyed key.
	Outcome func(key string) Outcome
	// Busy reports that the job has live work (an execution not of a
	// backfill) waiting or running, or a run of a backfill waiting, or
	// that one more run would pass its namespace's guarantee.
	Busy bool
	// Runnable is false when the job cannot run now (disabled, its app
	// missing or disabled): nothing is queued.
	Runnable bool
	// Missing: the job was deleted; the backfill is cancelled.
	Missing bool
}

// Step settles b's runs in flight and says how many runs to queue now:
// at most one (the next instant), only while b runs, the job is runnable
// and not busy, and fewer than b.Concurrency of b's runs are in flight.
func Step(b Backfill, v View) (next Backfill, queue int) {
	next = b
	next.InFlight = nil
	for _, f := range b.InFlight {
		switch v.Outcome(f.Key) {
		case Succeeded:
			next.Succeeded++
		case FailedRun:
			next.Failed++
			next.FailedAt = append(slices.Clip(next.FailedAt), f.At.Unix())
		case Unseen:
			if f.Unseen+1 >= 2 {
				next.Failed++ // lost: the job was updated, disabled or deleted under it
				next.FailedAt = append(slices.Clip(next.FailedAt), f.At.Unix())
				continue
			}
			f.Unseen++
			next.InFlight = append(next.InFlight, f)
		default:
			f.Unseen = 0
			next.InFlight = append(next.InFlight, f)
		}
	}
	if v.Missing && (next.State == Running || next.State == Paused) {
		next.State = Cancelled
	}
	if next.State == Running && next.Next >= next.Total && len(next.InFlight) == 0 {
		next.State, next.EndedAt = Done, v.Now
	}
	if next.State == Cancelled && len(next.InFlight) == 0 && next.EndedAt.IsZero() {
		next.EndedAt = v.Now
	}
	if next.State == Running && next.Next < next.Total && v.Runnable && !v.Busy && len(next.InFlight) < max(next.Concurrency, 1) {
		queue = 1
	}
	if changed(b, next) {
		next.UpdatedAt = v.Now
	}
	return next, queue
}

func changed(a, b Backfill) bool {
	if a.State != b.State || a.Succeeded != b.Succeeded || a.Failed != b.Failed || len(a.InFlight) != len(b.InFlight) {
		return true
	}
	for i := range a.InFlight {
		if a.InFlight[i] != b.InFlight[i] {
			return true
		}
	}
	return false
}

// Control applies an operator's pause, resume or cancel to b at now.
func Control(b Backfill, action string, now time.Time) (Backfill, error) {
	switch {
	case b.Final() || b.State == Cancelled:
		return b, errFinal(b)
	case action == "pause" && b.State == Running:
		b.State = Paused
	case action == "resume" && b.State == Paused:
		b.State = Running
	case action == "cancel":
		b.State = Cancelled
		if len(b.InFlight) == 0 {
			b.EndedAt = now
		}
	case action == "pause" || action == "resume":
		return b, nil // already so
	default:
		return b, errAction(action)
	}
	b.UpdatedAt = now
	return b, nil
}
