package scheduler

import (
	"context"
	"time"
)

// Events is what the producer tells the rest of the scheduler, its
// outputs besides the commits. No method may block.
type Events interface {
	// Fired: fires were committed for jobs (the launcher wakes).
	Fired(jobs []string)
	// Committed is a committed fire's lateness: when it became
	// launchable (the later of its commit and its instant) against its
	// instant, for metrics and benchmarks.
	Committed(job string, scheduled, committed time.Time)
	// Stale: a fire of job was found void though the catalog still holds
	// the configuration it was computed from (config): the catalog may be
	// behind the registry (a change it failed to apply), which the
	// producer would go on firing into the void; the scheduler reloads
	// the job if so (configFollower.refresh).
	Stale(ctx context.Context, job string, config uint64)
	// Loaded: every job has been scheduled at the term's start (ctx).
	Loaded(ctx context.Context)
	// Counted: the jobs the start's catch-up will queue fires for, once
	// counted and before it commits: until CaughtUp only those jobs'
	// entries wait (the term's other work launches meanwhile).
	Counted(ctx context.Context, jobs []string)
	// CaughtUp: the start's catch-up of the fires missed while no leader
	// fired has committed (or found none, or the term ended): the term's
	// launch rounds wait for it (Scheduler.roundHeld), so that an
	// execution the last leader staged and the missed fires of a
	// misfire=false job collapse into one before either is launched.
	CaughtUp(ctx context.Context)
}

// noEvents hears nothing.
type noEvents struct{}

func (noEvents) Fired([]string)                         {}
func (noEvents) Committed(string, time.Time, time.Time) {}
func (noEvents) Stale(context.Context, string, uint64)  {}
func (noEvents) Loaded(context.Context)                 {}
func (noEvents) Counted(context.Context, []string)      {}
func (noEvents) CaughtUp(context.Context)               {}

func (p *Producer) events() Events {
	if p.Events == nil {
		return noEvents{}
	}
	return p.Events
}
