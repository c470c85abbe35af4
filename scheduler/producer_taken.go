package scheduler

import (
	"time"

	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// What the producer took for a job and what it may still land: a job
// scheduled again at or before either would fire an instant twice, so
// every way a job is (re)planned starts after them.

// takenLocked is the latest instant this producer took for job: landed
// (LastTaken) or in flight and able to land (landingLocked). Scheduled
// again at or before it, for whatever reason, the job would fire that
// instant a second time: a misfire=true job gets two executions for it,
// and a misfire=false one a run of its own once the first has launched
// (under p.mu).
func (p *Producer) takenLocked(job string) time.Time {
	return laterOf(p.t.LastTaken(job), p.landingLocked(job))
}

// landingLocked is the latest instant of job's fires in flight that may
// still land (mayLand; under p.mu).
func (p *Producer) landingLocked(job string) time.Time {
	var last time.Time
	for _, f := range p.inflight {
		if f.Source == job && p.mayLand(f) {
			last = laterOf(last, f.At)
		}
	}
	return last
}

// mayLand reports whether a fire in flight may still land: it was
// computed from the configuration the catalog holds now (or from an
// unknown one). A fire computed from a configuration since replaced is
// void when it commits (registry.CronFire.Config): its instant is the new
// configuration's to fire.
func (p *Producer) mayLand(f timetable.Fire) bool {
	_, config, _ := p.Catalog.runnableStored(f.Source)
	return f.Config == 0 || config == 0 || f.Config == config
}

// afterTakenLocked moves each plan at or before the instant its job last
// took (takenLocked) to the job's next instant after it. A rebuild plans
// from its start, without the lock; a fire staged ahead (taken before its
// instant), or one taken while the plans were worked out, would be
// planned again, and its follower (Follow) is dropped as the rebuild
// bumps every generation (under p.mu).
func (p *Producer) afterTakenLocked(plans []timetable.Fire) {
	var landing map[string]time.Time
	for _, f := range p.inflight {
		if p.mayLand(f) {
			if landing == nil {
				landing = map[string]time.Time{}
			}
			landing[f.Source] = laterOf(landing[f.Source], f.At)
		}
	}
	for i, f := range plans {
		taken := laterOf(p.t.LastTaken(f.Source), landing[f.Source])
		if f.At.IsZero() || f.At.After(taken) {
			continue
		}
		plans[i] = timetable.Fire{Source: f.Source, Prev: taken}
		if at, config, ok := p.next(f.Source, taken); ok {
			plans[i].At, plans[i].Config = at, config
		}
	}
}
