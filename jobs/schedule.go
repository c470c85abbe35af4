package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// Limits of a job's schedule.
const (
	MaxCrons  = 16
	MaxJitter = 24 * time.Hour
)

// CronList is the job's crons: Cron (when set) then Crons.
func (c Config) CronList() []string {
	var out []string
	if s := strings.TrimSpace(c.Cron); s != "" {
		out = append(out, s)
	}
	for _, s := range c.Crons {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// HasSchedule reports whether the job fires on a schedule (a cron or
// crons).
func (c Config) HasSchedule() bool { return len(c.CronList()) > 0 }

// checkSchedule checks Crons, Jitter and Calendar (the crons' syntax is
// CheckFires's).
func (c Config) checkSchedule() error {
	if len(c.Crons) > MaxCrons {
		return fmt.Errorf("%w: crons has %d expressions; at most %d allowed", ErrInvalid, len(c.Crons), MaxCrons)
	}
	for i, s := range c.Crons {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%w: crons[%d] is empty", ErrInvalid, i)
		}
	}
	if _, _, err := c.JitterWindow(); err != nil {
		return err
	}
	if c.Calendar != "" {
		if err := calendar.ValidateName(c.Calendar); err != nil {
			return fmt.Errorf("%w: calendar: %v", ErrInvalid, err)
		}
	}
	if (c.Jitter != "" || c.Calendar != "" || len(c.Crons) > 0) && c.JobExecutionType == Daemon {
		return fmt.Errorf("%w: crons, jitter and calendar are for TRANSIENT jobs (a DAEMON job's executor runs its one cron)", ErrInvalid)
	}
	if (c.Jitter != "" || c.Calendar != "") && !c.HasSchedule() {
		return fmt.Errorf("%w: jitter and calendar need a cron or crons", ErrInvalid)
	}
	return nil
}

// JitterWindow is the job's own jitter window and whether it sets one
// ("" inherits).
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

// Plan is the job's schedule as the scheduler fires it: its crons (H
// hashed with its name), its jitter offset (its own window, else
// inherited, the scheduler-wide cron_jitter) and cal, the compiled
// calendar it names (nil when none). Nil without a cron.
func (c Config) Plan(cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	return c.PlanWith(cron.ParseFor, cal, inherited)
}

// PlanWith is Plan with a parser of its caller's (a memo of cron.ParseFor).
func (c Config) PlanWith(parse func(expr, key string) (*cron.Schedule, error), cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	exprs := c.CronList()
	if len(exprs) == 0 {
		return nil, nil
	}
	p := &cron.Plan{}
	for i, e := range exprs {
		s, err := parse(e, c.JobName)
		if err != nil {
			return nil, fmt.Errorf("%w: %s%v", ErrInvalid, cronField(c, i), err)
		}
		p.Crons = append(p.Crons, s)
	}
	w, own, err := c.JitterWindow()
	if err != nil {
		return nil, err
	}
	if !own {
		w = inherited
	}
	p.Offset = cron.Offset(c.JobName, w)
	if cal != nil {
		p.Calendar = cal
	}
	return p, nil
}
