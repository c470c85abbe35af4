package jobs

import (
	"fmt"
	"time"
)

// MaxDeadlineSeconds bounds startDeadlineSeconds and runDeadlineSeconds
// (7 days).
const MaxDeadlineSeconds = 7 * 24 * 3600

// DeadlineAtLayout is how runDeadlineAt is written: a time of day.
const DeadlineAtLayout = "15:04"

func (c Config) validateDeadlines() error {
	if err := CheckDeadlines(c.StartDeadlineSeconds, c.RunDeadlineSeconds, c.RunDeadlineAt); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.JobExecutionType == Daemon && (c.RunDeadlineSeconds > 0 || c.RunDeadlineAt != "") {
		return fmt.Errorf("%w: runDeadlineSeconds and runDeadlineAt are for TRANSIENT jobs: a DAEMON job's shards run for good", ErrInvalid)
	}
	return nil
}

// CheckDeadlines checks the deadline fields of a job or a workflow,
// naming the first bad one.
func CheckDeadlines(startSeconds, runSeconds int, at string) error {
	for _, d := range []struct {
		name string
		v    int
	}{{"startDeadlineSeconds", startSeconds}, {"runDeadlineSeconds", runSeconds}} {
		if d.v < 0 || d.v > MaxDeadlineSeconds {
			return fmt.Errorf("%s must be 0 (none) to %d (7 days), got %d", d.name, MaxDeadlineSeconds, d.v)
		}
	}
	if _, ok := DeadlineAt(at); !ok && at != "" {
		return fmt.Errorf("runDeadlineAt must be a time of day as HH:MM (24-hour, the timeZone's), got %q", at)
	}
	return nil
}

// DeadlineAt parses a runDeadlineAt (ok false: empty or not HH:MM).
func DeadlineAt(at string) (time.Time, bool) {
	if at == "" {
		return time.Time{}, false
	}
	hm, err := time.Parse(DeadlineAtLayout, at)
	return hm, err == nil
}

// NextAt is the first time of day hm (DeadlineAt's) at or after t in loc.
func NextAt(hm, t time.Time, loc *time.Location) time.Time {
	s := t.In(loc)
	due := time.Date(s.Year(), s.Month(), s.Day(), hm.Hour(), hm.Minute(), 0, 0, loc)
	if due.Before(s) {
		due = time.Date(s.Year(), s.Month(), s.Day()+1, hm.Hour(), hm.Minute(), 0, 0, loc)
	}
	return due
}

// HasDeadlines reports whether any deadline is set.
func (c Config) HasDeadlines() bool {
	return c.StartDeadlineSeconds > 0 || c.RunDeadlineSeconds > 0 || c.RunDeadlineAt != ""
}

// RunDeadlineAfter is the wall-clock deadline of a run started at started:
// the first runDeadlineAt at or after started in loc (ok false when none
// is set). A run started at 23:30 with runDeadlineAt 06:00 is due at 06:00
// the next day.
func (c Config) RunDeadlineAfter(started time.Time, loc *time.Location) (time.Time, bool) {
	hm, ok := DeadlineAt(c.RunDeadlineAt)
	if !ok {
		return time.Time{}, false
	}
	return NextAt(hm, started, loc), true
}
