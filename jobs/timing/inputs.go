package timing

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/namespace"
)

// Inputs are what a plan reads besides the schedule: the default zone, the
// scheduler-wide jitter window, each namespace's window, and the
// namespaces' calendars, compiled. The leader reads them from the registry
// on its own context and hands them in when they change, so computing an
// instant reads nothing and waits on nothing: the one place where the
// instants of a job, a workflow, a catch-up or a backfill are planned
// (Plan).
type Inputs struct {
	// Zone is the default time zone: of a schedule and of a calendar that
	// name none (nil: UTC).
	Zone *time.Location
	// Wide is the scheduler-wide jitter window (cron_jitter).
	Wide time.Duration
	// Jitters are the namespaces that set a jitter window of their own.
	Jitters map[string]time.Duration
	// Calendars are the namespaces' calendars by CalendarKey, compiled in
	// Zone; a calendar that did not compile holds its error instead.
	Calendars map[string]Compiled
}

// Compiled is one calendar as the leader read it: compiled, or why not.
type Compiled struct {
	Calendar *calendar.Compiled
	Err      error
	// Source is the calendar as stored: two reads of one calendar compile
	// alike (Inputs.Equal).
	Source string
}

// CalendarKey names calendar name of namespace ns in Inputs.Calendars.
func CalendarKey(ns, name string) string { return ns + "/" + name }

// ErrCalendarNotFound: no such calendar in the namespace.
var ErrCalendarNotFound = errors.New("calendar not found")

// NoCalendar is the error of a calendar name a namespace does not hold.
func NoCalendar(ns, name string) error {
	return fmt.Errorf("%w: no calendar '%s' in namespace '%s'", ErrCalendarNotFound, name, ns)
}

// Inherited is the jitter window a source of key inherits when it sets
// none: its namespace's, else Wide.
func (in Inputs) Inherited(key string) time.Duration {
	if d, ok := in.Jitters[namespace.Of(key)]; ok {
		return d
	}
	return in.Wide
}

func (in Inputs) zone() *time.Location {
	if in.Zone == nil {
		return time.UTC
	}
	return in.Zone
}

// Plan is s as it fires (Schedule.Plan, with the calendar it names and the
// window it inherits taken from in) and the zone its crons are read in. A
// nil plan without error: s has no cron. parse is cron.ParseFor or a memo
// of it (nil: cron.ParseFor).
func (in Inputs) Plan(s Schedule, parse func(expr, key string) (*cron.Schedule, error)) (*cron.Plan, *time.Location, error) {
	loc, err := s.Location(in.zone())
	if err != nil {
		return nil, nil, err
	}
	var cal cron.Excluder
	if s.Calendar != "" && s.Has() {
		ns := namespace.Of(s.Key)
		c, ok := in.Calendars[CalendarKey(ns, s.Calendar)]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("calendar %q: %w", s.Calendar, NoCalendar(ns, s.Calendar))
		case c.Err != nil:
			return nil, nil, fmt.Errorf("calendar %q: %w", s.Calendar, c.Err)
		}
		cal = c.Calendar
	}
	p, err := s.Plan(parse, cal, in.Inherited(s.Key))
	return p, loc, err
}

// Next is s's next instant strictly after `after` (false: none, or s does
// not plan).
func (in Inputs) Next(s Schedule, parse func(expr, key string) (*cron.Schedule, error), after time.Time) (time.Time, bool) {
	p, loc, err := in.Plan(s, parse)
	if err != nil || p == nil {
		return time.Time{}, false
	}
	next := p.Next(after, loc)
	return next, !next.IsZero()
}

// Equal reports whether in and o plan every schedule alike: the same
// zone, windows and calendars (from the same sources).
func (in Inputs) Equal(o Inputs) bool {
	return in.zone().String() == o.zone().String() && in.Wide == o.Wide && maps.Equal(in.Jitters, o.Jitters) &&
		maps.EqualFunc(in.Calendars, o.Calendars, func(a, b Compiled) bool { return a.Source == b.Source })
}
