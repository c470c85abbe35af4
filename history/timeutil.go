package history

import (
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

// floor truncates t to the start of its minute, hour or day; hours and days
// follow loc (a zone with a :30 offset has its hours on the half hour).
func floor(t time.Time, iv view.Interval, loc *time.Location) time.Time {
	l := t.In(loc)
	switch iv {
	case view.Minute:
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, loc).UTC()
	case view.Hour:
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), 0, 0, 0, loc).UTC()
	}
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc).UTC()
}

// next returns the start of the interval after the one starting at t.
func next(t time.Time, iv view.Interval, loc *time.Location) time.Time {
	if iv == view.Day {
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc).UTC()
	}
	return t.Add(iv.Step()).UTC()
}

// prev returns the start of the interval before the one starting at t.
func prev(t time.Time, iv view.Interval, loc *time.Location) time.Time {
	if iv == view.Day {
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day()-1, 0, 0, 0, 0, loc).UTC()
	}
	return t.Add(-iv.Step()).UTC()
}

// span lists the interval starts from first to last, both included.
func span(first, last time.Time, iv view.Interval, loc *time.Location) []time.Time {
	var out []time.Time
	for t := first; !t.After(last); t = next(t, iv, loc) {
		out = append(out, t)
	}
	return out
}
