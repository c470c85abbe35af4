package scheduler

import (
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
)

// Each source's schedule as the timetable asks it: computed from the
// source's timing.Schedule and the inputs read last (timing.Inputs.Plan,
// the one plan of every job, workflow, catch-up and backfill), with no
// I/O.

// calendarUnread reports a runnable job or a workflow naming a calendar
// the inputs do not hold (yet: made since they were read, or gone).
func (p *Producer) calendarUnread(source string) bool {
	if wf, ok := flowOf(source); ok {
		return p.flowCalendarUnread(wf)
	}
	j, _, ok := p.Catalog.runnableStored(source)
	in := p.inputs.Load()
	if !ok || in == nil || j.Calendar == "" || !j.HasSchedule() {
		return false
	}
	_, held := in.Calendars[timing.CalendarKey(namespace.Of(j.JobName), j.Calendar)]
	return !held
}

// next is a source's schedule (timetable.Next): a workflow's, or a job's
// next fire strictly after `after` for a transient job that may run.
func (p *Producer) next(source string, after time.Time) (time.Time, uint64, bool) {
	if wf, ok := flowOf(source); ok {
		return p.nextFlow(wf, after)
	}
	j, config, ok := p.Catalog.runnableStored(source)
	if !ok || j.JobExecutionType != jobs.Transient {
		return time.Time{}, 0, false
	}
	at, ok := p.nextFire(j, after)
	return at, config, ok
}

func (p *Producer) nextFire(j jobs.Config, after time.Time) (time.Time, bool) {
	return p.nextOf(j.Timing(), j.JobName, after)
}

// nextOf is s's next instant strictly after `after`, with the inputs
// read last (none yet: nothing is planned without its calendar); source
// names it in the log.
func (p *Producer) nextOf(s timing.Schedule, source string, after time.Time) (time.Time, bool) {
	in := p.inputs.Load()
	if in == nil {
		return time.Time{}, false
	}
	pl, loc, err := in.Plan(s, p.Catalog.parse)
	if err != nil || pl == nil {
		if err != nil {
			p.Log.Warn("not scheduled", "source", source, "err", err)
		}
		return time.Time{}, false
	}
	next := pl.Next(after, loc)
	return next, !next.IsZero()
}
