// Package timing is when a job or a workflow fires, one value for both
// (Schedule): its crons, time zone, jitter window, calendar and misfire
// rule, with the location, the jitter, the plan and the checks they share.
// Jobs and workflows keep their own fields (their JSON is theirs) and hand
// a Schedule out; the producer, the previews and backfill compute instants
// from it alone. Pure: no I/O, no clock.
package timing

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// MaxJitter bounds a jitter window.
const MaxJitter = 24 * time.Hour

// Schedule is when one source (a job or a workflow) fires.
type Schedule struct {
	// Key is the source's scheduler-wide name (namespace.Key): "H" fields
	// and the jitter offset hash it.
	Key string
	// Crons are the Quartz expressions whose union fires (none: no
	// schedule).
	Crons []string
	// Zone is the crons' time zone ("": the scheduler's default).
	Zone string
	// Jitter is the source's own jitter window ("": inherited, "0s": none).
	Jitter string
	// Calendar names the namespace's business calendar whose excluded
	// days never fire ("": none).
	Calendar string
	// Misfire: instants missed while nothing fired each run (true) or
	// collapse into one (false).
	Misfire bool
}

// Has reports whether the source fires on a schedule.
func (s Schedule) Has() bool { return len(s.Crons) > 0 }

func (s Schedule) trigger(expr string) cron.Trigger {
	return cron.Trigger{Cron: expr, TimeZone: s.Zone, Key: s.Key}
}

// Location is the crons' time zone, or fallback when none is set.
func (s Schedule) Location(fallback *time.Location) (*time.Location, error) {
	return s.trigger("").Location(fallback)
}

// JitterWindow is the source's own jitter window and whether it sets one
// ("" inherits).
func (s Schedule) JitterWindow() (time.Duration, bool, error) {
	if s.Jitter == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(s.Jitter)
	if err != nil || d < 0 || d > MaxJitter {
		return 0, false, fmt.Errorf("jitter %q must be a duration from 0s to %s, such as 30m or 90s", s.Jitter, MaxJitter)
	}
	return d, true, nil
}

// Window is the jitter window the source fires with: its own, else
// inherited (its namespace's or the scheduler-wide one).
func (s Schedule) Window(inherited time.Duration) (time.Duration, error) {
	w, own, err := s.JitterWindow()
	if err != nil || own {
		return w, err
	}
	return inherited, nil
}

// Check checks the fields every source shares: the jitter window and
// the calendar's name (the crons' syntax is CheckFires's; how many crons
// a source may have is its own rule). Its errors name the field; the
// caller marks them as its own kind of invalid.
func (s Schedule) Check() error {
	if _, _, err := s.JitterWindow(); err != nil {
		return err
	}
	if s.Calendar != "" {
		if err := calendar.ValidateName(s.Calendar); err != nil {
			return fmt.Errorf("calendar: %v", err)
		}
	}
	return nil
}

// Orphaned reports a jitter window or a calendar set without a cron to
// apply them to.
func (s Schedule) Orphaned() bool { return (s.Jitter != "" || s.Calendar != "") && !s.Has() }

// CronError is a cron of Crons that does not parse (Index: its place).
type CronError struct {
	Index int
	Err   error
}

func (e *CronError) Error() string { return e.Err.Error() }
func (e *CronError) Unwrap() error { return e.Err }

// CheckFires reports an error when a cron never fires after now (in the
// zone, or fallback): Quartz refuses such a trigger. The error of the
// i-th cron is a *CronError.
func (s Schedule) CheckFires(now time.Time, fallback *time.Location) error {
	for i, e := range s.Crons {
		if err := s.trigger(e).CheckFires(now, fallback); err != nil {
			return &CronError{Index: i, Err: err}
		}
	}
	return nil
}

// Plan is the schedule as it fires: its crons (parsed by parse, cron.ParseFor
// or a memo of it; "H" hashed with Key), the jitter offset of its window
// (own, else inherited) and cal, the compiled calendar it names (nil: none).
// Nil without a cron. A cron that does not parse is a *CronError.
func (s Schedule) Plan(parse func(expr, key string) (*cron.Schedule, error), cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	if !s.Has() {
		return nil, nil
	}
	if parse == nil {
		parse = cron.ParseFor
	}
	p := &cron.Plan{}
	for i, e := range s.Crons {
		c, err := parse(e, s.Key)
		if err != nil {
			return nil, &CronError{Index: i, Err: err}
		}
		p.Crons = append(p.Crons, c)
	}
	w, err := s.Window(inherited)
	if err != nil {
		return nil, err
	}
	p.Offset = cron.Offset(s.Key, w)
	if cal != nil {
		p.Calendar = cal
	}
	return p, nil
}
