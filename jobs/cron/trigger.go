package cron

import (
	"fmt"
	"strings"
	"time"
)

// Trigger is a cron expression and the IANA time zone it is read in, both
// optional: what a job and a workflow declare to fire on a schedule. Its
// errors are plain; a job or workflow wraps them in its own ErrInvalid.
type Trigger struct {
	Cron     string
	TimeZone string
	Key      string // the name an "H" field hashes (the job's or workflow's)
}

// Location is the trigger's time zone, or fallback when it names none.
func (t Trigger) Location(fallback *time.Location) (*time.Location, error) {
	if t.TimeZone == "" {
		return fallback, nil
	}
	loc, err := time.LoadLocation(t.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q is not an IANA time zone name", t.TimeZone)
	}
	return loc, nil
}

// Schedule parses the cron (a *ParseError when it does not parse); nil
// when the trigger has none.
func (t Trigger) Schedule() (*Schedule, error) {
	if strings.TrimSpace(t.Cron) == "" {
		return nil, nil
	}
	return ParseFor(t.Cron, t.Key)
}

// NeverFiresError says a cron has no fire after a time: no date matches its
// day-of-month, month, day-of-week and year fields.
type NeverFiresError struct {
	Expr  string
	After time.Time // in the trigger's time zone
}

func (e *NeverFiresError) Error() string {
	return fmt.Sprintf("cron %q never fires after %s", e.Expr, e.After.Format("2006-01-02 15:04:05 MST"))
}

// CheckFires returns a *NeverFiresError when the cron has no fire after now
// in the trigger's time zone (or fallback), the parse or time zone error of
// a bad trigger, and nil otherwise; a trigger without cron passes.
func (t Trigger) CheckFires(now time.Time, fallback *time.Location) error {
	s, err := t.Schedule()
	if err != nil || s == nil {
		return err
	}
	loc, err := t.Location(fallback)
	if err != nil {
		return err
	}
	if s.Next(now, loc).IsZero() {
		return &NeverFiresError{Expr: t.Cron, After: now.In(loc)}
	}
	return nil
}
