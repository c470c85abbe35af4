package cron

import (
	"time"
)

// Excluder is a calendar as a plan consults it: Excluded reports whether
// an instant is excluded and, when it is, the first instant after the
// exclusion (the search goes on from there).
type Excluder interface {
	Excluded(t time.Time) (excluded bool, until time.Time)
}

// Plan is when a job (or workflow) fires: the union of its crons, each
// instant moved later by a fixed jitter offset, those whose nominal instant
// a calendar excludes skipped (Quartz's HolidayCalendar: skipped, not
// moved). It is the one place instants are computed: the leader's firing,
// the previews and a backfill's range all call Next. Immutable.
type Plan struct {
	Crons    []*Schedule
	Offset   time.Duration // the jitter offset (Offset), 0 without jitter
	Calendar Excluder      // nil: nothing excluded
}

// maxExcluded bounds the excluded instants one Next walks past before it
// gives up (a calendar excluding every instant of a schedule).
const maxExcluded = 100_000

// Offset is the fixed jitter offset of key within a window: a whole number
// of seconds in [0, window), uniform over keys (a hash of the key), the
// same in every process. A window under 1 s gives 0.
func Offset(key string, window time.Duration) time.Duration {
	secs := uint64(window / time.Second)
	if secs == 0 {
		return 0
	}
	return time.Duration(Hash(key)%secs) * time.Second
}

// Next returns the first fire strictly after t in loc's wall clock (nil:
// UTC), or the zero Time when there is none before the end of MaxYear.
// An instant two crons share fires once.
func (p *Plan) Next(t time.Time, loc *time.Location) time.Time {
	n := p.NextNominal(t.Add(-p.Offset), loc)
	if n.IsZero() {
		return n
	}
	return n.Add(p.Offset)
}

// NextNominal returns the first nominal instant (before jitter) strictly
// after t that the calendar does not exclude.
func (p *Plan) NextNominal(t time.Time, loc *time.Location) time.Time {
	for range maxExcluded {
		n := p.union(t, loc)
		if n.IsZero() || p.Calendar == nil {
			return n
		}
		ex, until := p.Calendar.Excluded(n)
		if !ex {
			return n
		}
		// The next candidate is at or after until (Next is strictly after).
		t = n
		if next := until.Add(-time.Second); next.After(t) {
			t = next
		}
	}
	return time.Time{}
}

func (p *Plan) union(t time.Time, loc *time.Location) time.Time {
	var best time.Time
	for _, s := range p.Crons {
		if n := s.Next(t, loc); !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	return best
}

// NextN returns up to n consecutive fires after t.
func (p *Plan) NextN(t time.Time, loc *time.Location, n int) []time.Time {
	out := make([]time.Time, 0, max(min(n, 1024), 0))
	for range n {
		t = p.Next(t, loc)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Between returns the fires in (from, to], at most limit of them (and
// whether it stopped at limit): a backfill's instants.
func (p *Plan) Between(from, to time.Time, loc *time.Location, limit int) ([]time.Time, bool) {
	var out []time.Time
	for t := p.Next(from, loc); !t.IsZero() && !t.After(to); t = p.Next(t, loc) {
		if len(out) == limit {
			return out, true
		}
		out = append(out, t)
	}
	return out, false
}
