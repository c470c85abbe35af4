package workflow

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
)

// MaxJitter bounds a workflow's jitter window.
const MaxJitter = timing.MaxJitter

// Timing is when the workflow fires: the schedule value jobs and
// workflows share (one cron at most).
func (c Config) Timing() timing.Schedule {
	t := timing.Schedule{Key: c.Name, Zone: c.TimeZone, Jitter: c.Jitter, Calendar: c.Calendar, Misfire: c.Misfire}
	if strings.TrimSpace(c.Cron) != "" {
		t.Crons = []string{c.Cron}
	}
	return t
}

func (c Config) checkSchedule() error {
	t := c.Timing()
	if err := t.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if t.Orphaned() {
		return fmt.Errorf("%w: jitter and calendar need a cron", ErrInvalid)
	}
	return nil
}

// JitterWindow is the workflow's own jitter window and whether it sets
// one ("" inherits).
func (c Config) JitterWindow() (time.Duration, bool, error) {
	d, own, err := c.Timing().JitterWindow()
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return d, own, nil
}

// Plan is the workflow's schedule as the engine fires it
// (timing.Schedule.Plan: its cron, "H" hashed with its name, its jitter
// offset and cal, the compiled calendar it names, nil: none). Nil without
// cron.
func (c Config) Plan(cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	p, err := c.Timing().Plan(cron.ParseFor, cal, inherited)
	var bad *timing.CronError
	switch {
	case errors.As(err, &bad):
		return nil, fmt.Errorf("%w: cron: %v", ErrInvalid, bad.Err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return p, nil
}
