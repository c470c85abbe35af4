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
	for _, d := range []struct {
		name string
		v    int
	}{{"startDeadlineSeconds", c.StartDeadlineSeconds}, {"runDeadlineSeconds", c.RunDeadlineSeconds}} {
		if d.v < 0 || d.v > MaxDeadlineSeconds {
			return fmt.Errorf("%w: %s must be 0 (none) to %d (7 days), got %d", ErrInvalid, d.name, MaxDeadlineSeconds, d.v)
		}
	}
	if c.RunDeadlineAt != "" {
		if _, err := time.Parse(DeadlineAtLayout, c.RunDeadlineAt); err != nil {
			return fmt.Errorf("%w: runDeadlineAt must be a time of day as HH:MM (24-hour, the job's timeZone), got %q", ErrInvalid, c.RunDeadlineAt)
		}
	}
	if c.JobExecutionType == Daemon && (c.RunDeadlineSeconds > 0 || c.RunDeadlineAt != "") {
		return fmt.Errorf("%w: runDeadlineSeconds and runDeadlineAt are for TRANSIENT jobs: a DAEMON job's shards run for good", ErrInvalid)
	}
	return nil
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
	if c.RunDeadlineAt == "" {
		return time.Time{}, false
	}
	hm, err := time.Parse(DeadlineAtLayout, c.RunDeadlineAt)
	if err != nil {
		return time.Time{}, false
	}
	s := started.In(loc)
	due := time.Date(s.Year(), s.Month(), s.Day(), hm.Hour(), hm.Minute(), 0, 0, loc)
	if due.Before(s) {
		due = time.Date(s.Year(), s.Month(), s.Day()+1, hm.Hour(), hm.Minute(), 0, 0, loc)
	}
	return due, true
}
