package scheduler

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// FlowRuns is where the producer commits a workflow's fires: the
// workflow engine, which makes one run per instant. The producer holds
// the workflows' schedules beside the jobs' in its one timetable (the
// engine hands them in: ScheduleFlow); the engine has no timer of its own
// for them.
type FlowRuns interface {
	// FireFlow hands workflow's fires to the engine, which makes its cron
	// runs for instants (oldest first, by its misfire rule and
	// maxConcurrentRuns) and moves its watermark
	// (registry.WorkflowState.FiredUntil) to the last, in one commit, in
	// the order handed. Each run's id is its instant's, so an instant
	// fired twice (by two leaders) makes one run. config is the version of
	// the schedule the instants were computed from (ScheduleFlow): a
	// change binds when the producer takes it, so a fire handed over is
	// its instant's only one even if the engine has meanwhile replaced
	// the schedule (only a fire from before the workflow was disabled or
	// deleted is void). It must not wait for the commit (the producer's loop fires
	// the jobs too); an error: the engine has stopped.
	FireFlow(ctx context.Context, workflow string, config uint64, instants []time.Time) error
}

// maxMissedFlowFires bounds the runs a misfire=true workflow gets for the
// instants no leader fired.
const maxMissedFlowFires = 100

// flowPrefix keys a workflow in the timetable beside the jobs: no job
// name holds a ':' (app.ValidateName), so the two never meet.
const flowPrefix = "workflow:"

func flowSource(workflow string) string { return flowPrefix + workflow }

// flowOf is the workflow a timetable source names (ok false: a job).
func flowOf(source string) (string, bool) { return strings.CutPrefix(source, flowPrefix) }

// flow is one workflow's schedule as the engine handed it in.
type flow struct {
	s      timing.Schedule
	config uint64
	// since is its watermark when it is to be caught up (a term's start):
	// its instants after it up to the catch-up are fired first (zero:
	// none pending).
	since time.Time
}

// ScheduleFlow fires workflow by s from now on (the engine's load, a
// change of its config or of its disable flag); config versions s (the
// engine's: FlowRuns.FireFlow). since, when set, is its watermark at the
// term's start: the instants after it up to now, which no leader fired,
// are fired first by s's misfire rule. Safe from any goroutine; it never
// waits on the loop.
//
// A change binds now: the fires of the old schedule held for an instant
// still to come are dropped (the new schedule fires its own), and those
// whose instant has come are handed over still, as a job's fire
// committed before a change runs: the new schedule starts strictly after
// now, so every instant is fired by one schedule, once.
func (p *Producer) ScheduleFlow(workflow string, s timing.Schedule, config uint64, since time.Time) {
	p.mu.Lock()
	p.init()
	if p.flows == nil {
		p.flows = map[string]flow{}
	}
	p.dropHeldFlow(workflow, p.Clock.Now())
	f := flow{s: s, config: config, since: since}
	if old, ok := p.flows[workflow]; ok && since.IsZero() {
		f.since = old.since // a catch-up not made yet still is
	}
	p.flows[workflow] = f
	if !f.since.IsZero() {
		if p.pendingFlows == nil {
			p.pendingFlows = map[string]bool{}
		}
		p.pendingFlows[workflow] = true
		p.t.Changed(flowSource(workflow), p.Clock.Now(), none) // until its catch-up schedules it
	} else {
		p.scheduleLocked(flowSource(workflow), p.Clock.Now())
	}
	p.mu.Unlock()
	p.poke()
}

// none is the schedule of a source that does not fire.
func none(string, time.Time) (time.Time, uint64, bool) { return time.Time{}, 0, false }

// UnscheduleFlow fires workflow no more (deleted, disabled). Safe from
// any goroutine.
func (p *Producer) UnscheduleFlow(workflow string) {
	p.mu.Lock()
	p.init()
	p.dropHeldFlow(workflow, time.Time{})
	delete(p.flows, workflow)
	delete(p.pendingFlows, workflow)
	p.scheduleLocked(flowSource(workflow), p.Clock.Now())
	p.mu.Unlock()
	p.poke()
}

// dropHeldFlow forgets workflow's held fires whose instant is after from
// (under p.mu).
func (p *Producer) dropHeldFlow(workflow string, from time.Time) {
	src := flowSource(workflow)
	p.heldFlows = slices.DeleteFunc(p.heldFlows, func(h timetable.Fire) bool { return h.Source == src && h.At.After(from) })
}

// nextFlow is workflow's next instant strictly after `after` (under p.mu,
// as every Next the timetable calls).
func (p *Producer) nextFlow(workflow string, after time.Time) (time.Time, uint64, bool) {
	f, ok := p.flows[workflow]
	in := p.inputs.Load()
	if !ok || in == nil {
		return time.Time{}, 0, false
	}
	at, ok := p.nextOf(f.s, workflow, after)
	return at, f.config, ok
}

// flowCalendarUnread reports a workflow naming a calendar the inputs do
// not hold (under p.mu).
func (p *Producer) flowCalendarUnread(workflow string) bool {
	f, ok := p.flows[workflow]
	in := p.inputs.Load()
	if !ok || in == nil || f.s.Calendar == "" || !f.s.Has() {
		return false
	}
	_, held := in.Calendars[timing.CalendarKey(namespace.Of(f.s.Key), f.s.Calendar)]
	return !held
}

// flowPlansLocked are the workflows' next fires from now, for a rebuild
// of the timetable (under p.mu). A workflow is scheduled from now, not
// from the jobs' watermark: its fires are never committed ahead of their
// instant (holdFlows), so no earlier term made the ones after now.
func (p *Producer) flowPlansLocked() []timetable.Fire {
	now := p.Clock.Now()
	var plans []timetable.Fire
	for name, f := range p.flows {
		if !f.since.IsZero() {
			continue // its catch-up schedules it
		}
		src := flowSource(name)
		if at, config, ok := p.nextFlow(name, now); ok {
			plans = append(plans, timetable.Fire{Source: src, Prev: now, At: at, Config: config})
		}
	}
	return plans
}

// holdFlows keeps the workflow fires among due until their instant: a
// run begins as it is made, so unlike a job's ready entry (held back by
// NotBefore) it cannot be committed ahead (under p.mu).
func (p *Producer) holdFlows(due []timetable.Fire) (jobs []timetable.Fire) {
	jobs = due[:0:0]
	for _, f := range due {
		if _, ok := flowOf(f.Source); ok {
			if j := slices.IndexFunc(p.heldFlows, func(h timetable.Fire) bool { return h.Source == f.Source && h.At.Equal(f.At) }); j >= 0 {
				p.heldFlows[j] = f // taken again after a rebuild of the timetable: this one is followed
				continue
			}
			i, _ := slices.BinarySearchFunc(p.heldFlows, f.At, func(h timetable.Fire, at time.Time) int {
				if h.At.After(at) {
					return 1
				}
				return -1
			})
			p.heldFlows = slices.Insert(p.heldFlows, i, f)
			continue
		}
		jobs = append(jobs, f)
	}
	return jobs
}

// flowWake is the instant of the soonest workflow fire held (under p.mu).
func (p *Producer) flowWake() (time.Time, bool) {
	if len(p.heldFlows) == 0 {
		return time.Time{}, false
	}
	return p.heldFlows[0].At, true
}

// fireFlows hands the workflow fires whose instant has come to the
// engine, each followed by its next by the misfire rule, then the
// catch-ups pending: the instants after a workflow's watermark that no
// leader fired.
func (p *Producer) fireFlows(ctx context.Context) {
	now := p.Clock.Now()
	p.mu.Lock()
	i := 0
	for i < len(p.heldFlows) && !p.heldFlows[i].At.After(now) {
		i++
	}
	due := slices.Clone(p.heldFlows[:i])
	p.heldFlows = p.heldFlows[:copy(p.heldFlows, p.heldFlows[i:])]
	p.mu.Unlock()
	for _, f := range due {
		name, _ := flowOf(f.Source)
		p.mu.Lock()
		_, ok := p.flows[name]
		p.mu.Unlock()
		if !ok { // unscheduled since it was taken (disabled, deleted): it fires no more
			continue
		}
		// A change since it was taken came after its instant: the new
		// schedule fires only later ones (ScheduleFlow), so this one is
		// handed over, once.
		if p.fireFlow(ctx, name, f.Config, []time.Time{f.At}) {
			p.mu.Lock()
			p.t.Landed(f)
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.t.Follow(f, now, p.next)
		p.mu.Unlock()
	}
	p.catchUpFlows(ctx, now)
}

// catchUpFlows fires, for each workflow handed in with a watermark, the
// instants after it up to now, at most maxMissedFlowFires (the engine
// keeps the last alone for a misfire=false workflow), then schedules it
// from now.
func (p *Producer) catchUpFlows(ctx context.Context, now time.Time) {
	p.mu.Lock()
	names := slices.Sorted(maps.Keys(p.pendingFlows))
	clear(p.pendingFlows)
	p.mu.Unlock()
	for _, name := range names {
		p.mu.Lock()
		f, ok := p.flows[name]
		p.mu.Unlock()
		if !ok || f.since.IsZero() {
			continue
		}
		next := func(after time.Time) (time.Time, bool) { return p.nextOf(f.s, name, after) }
		missed := timetable.Missed(next, f.since, now, maxMissedFlowFires, true)
		if len(missed) > 0 {
			p.Log.Info("producer: workflow fires no leader made", "workflow", name, "since", f.since, "fires", len(missed), "misfire", f.s.Misfire)
			p.fireFlow(ctx, name, f.config, missed)
		}
		p.mu.Lock()
		if g, ok := p.flows[name]; ok && g.since.Equal(f.since) {
			g.since = time.Time{}
			p.flows[name] = g
			p.scheduleLocked(flowSource(name), laterOf(now, f.since))
		}
		p.mu.Unlock()
	}
}

// fireFlow hands a workflow's fires to the engine (false: it has
// stopped).
func (p *Producer) fireFlow(ctx context.Context, workflow string, config uint64, instants []time.Time) bool {
	if p.Flows == nil {
		return false
	}
	if err := p.Flows.FireFlow(ctx, workflow, config, instants); err != nil {
		if ctx.Err() == nil {
			p.Log.Warn("producer: workflow fire", "workflow", workflow, "at", instants[len(instants)-1], "err", err)
		}
		return false
	}
	return true
}
