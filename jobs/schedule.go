package jobs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
)

// Limits of a job's schedule.
const (
	MaxCrons  = 16
	MaxJitter = timing.MaxJitter
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

// Timing is when the job fires: the schedule value jobs and workflows
// share (its crons are CronList).
func (c Config) Timing() timing.Schedule {
	return timing.Schedule{Key: c.JobName, Crons: c.CronList(), Zone: c.TimeZone, Jitter: c.Jitter, Calendar: c.Calendar, Misfire: c.Misfire}
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
	t := c.Timing()
	if err := t.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if (c.Jitter != "" || c.Calendar != "" || len(c.Crons) > 0) && c.JobExecutionType == Daemon {
		return fmt.Errorf("%w: crons, jitter and calendar are for TRANSIENT jobs (a DAEMON job's executor runs its one cron)", ErrInvalid)
	}
	if t.Orphaned() {
		return fmt.Errorf("%w: jitter and calendar need a cron or crons", ErrInvalid)
	}
	return nil
}

// JitterWindow is the job's own jitter window and whether it sets one
// ("" inherits).
func (c Config) JitterWindow() (time.Duration, bool, error) {
	d, own, err := c.Timing().JitterWindow()
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return d, own, nil
}

// Plan is the job's schedule as the scheduler fires it (timing.Schedule.Plan:
// its crons, H hashed with its name, its jitter offset and cal, the
// compiled calendar it names, nil when none). Nil without a cron.
func (c Config) Plan(cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	return c.PlanWith(cron.ParseFor, cal, inherited)
}

// PlanWith is Plan with a parser of its caller's (a memo of cron.ParseFor).
func (c Config) PlanWith(parse func(expr, key string) (*cron.Schedule, error), cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	p, err := c.Timing().Plan(parse, cal, inherited)
	if err != nil {
		return nil, c.invalid(err)
	}
	return p, nil
}

// invalid marks a schedule's error as the job's, naming the cron of
// Crons it comes from.
func (c Config) invalid(err error) error {
	if ce := (*timing.CronError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("%w: %s%v", ErrInvalid, cronField(c, ce.Index), ce.Err)
	}
	return fmt.Errorf("%w: %v", ErrInvalid, err)
}
