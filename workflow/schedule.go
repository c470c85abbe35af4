package workflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// MaxJitter bounds a workflow's jitter window.
const MaxJitter = 24 * time.Hour

func (c Config) checkSchedule() error {
	if _, _, err := c.JitterWindow(); err != nil {
		return err
	}
	if c.Calendar != "" {
		if err := calendar.ValidateName(c.Calendar); err != nil {
			return fmt.Errorf("%w: calendar: %v", ErrInvalid, err)
		}
	}
	if (c.Jitter != "" || c.Calendar != "") && strings.TrimSpace(c.Cron) == "" {
		return fmt.Errorf("%w: jitter and calendar need a cron", ErrInvalid)
	}
	return nil
}

// JitterWindow is the workflow's own jitter window and whether it sets
// one ("" inherits).
func (c Config) JitterWindow() (time.Duration, bool, error) {
	if c.Jitter == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(c.Jitter)
	if err != nil || d < 0 || d > MaxJitter {
		return 0, false, fmt.Errorf("%w: jitter %q must be a duration from 0s to %s, such as 30m or 90s", ErrInvalid, c.Jitter, MaxJitter)
	}
	return d, true, nil
}

// Plan is the workflow's schedule as the engine fires it: its cron ("H"
// hashed with its name), its jitter offset (own window, else inherited)
// and cal, the compiled calendar it names (nil: none). Nil without cron.
func (c Config) Plan(cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	s, err := c.Schedule()
	if err != nil || s == nil {
		return nil, err
	}
	w, own, err := c.JitterWindow()
	if err != nil {
		return nil, err
	}
	if !own {
		w = inherited
	}
	p := &cron.Plan{Crons: []*cron.Schedule{s}, Offset: cron.Offset(c.Name, w)}
	if cal != nil {
		p.Calendar = cal
	}
	return p, nil
}
