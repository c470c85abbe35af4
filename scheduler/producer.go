package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// Producer turns cron fires into ready-queue entries, and workflows'
// into their runs (through Flows). One timetable of next fire times and
// one timer serve every job and workflow (no goroutine per source).
// Leader-only: run it under the leader context.
type Producer struct {
	Registry *registry.Registry
	// Dispatch commits the fires (nil: Registry).
	Dispatch Dispatcher
	Catalog  *Catalog
	Clock    clock.Clock
	Location *time.Location // the scheduler's default time zone
	Log      *slog.Logger
	// Flows makes the workflows' runs for their fires (nil: no workflow
	// fires; flows.go).
	Flows FlowRuns
	// Events hears what the producer did besides its commits (nil: no
	// one).
	Events Events
	// Lead stages fires this long before their instant: the ready entry is
	// committed ahead, held back until the instant (Ready.NotBefore), so the
	// commit's cost and jitter fall before the instant instead of after it.
	// The lead grows beyond Lead when commits take longer: to twice the
	// slowest recent commit of one instant's fires, up to maxLead.
	Lead time.Duration
	// Jitter is the scheduler-wide jitter window (cron_jitter) of the jobs
	// that set none: each fire moved later by a fixed offset of the job's
	// own in [0, Jitter), unless its namespace sets one. 0: none.
	Jitter time.Duration

	// inputs are what plans read besides the jobs' schedules (calendars,
	// the namespaces' windows, the default zone), read by Run on the
	// term's context (followInputs): computing an instant reads nothing.
	inputs atomic.Pointer[timing.Inputs]
	readAt atomic.Int64  // when they were read last (Unix ns)
	reread chan struct{} // kicks followInputs

	mu sync.Mutex // the producer's one lock: everything below
	// unplanned are the jobs whose calendar the inputs did not hold
	// (noteUnplanned): planned again once a read brings new calendars.
	unplanned map[string]unplannedAt
	floor     time.Time       // fires at or before it were handled by an earlier producer or the catch-up
	marked    time.Time       // the watermark this producer last committed (commitFires: it never goes back)
	t         timetable.Table // the next fires, the staged ones, the ready entries believed present
	// inflight are the fires taken and not yet committed (popDue to
	// fireDue's commits): RescheduleFrom never schedules again an
	// instant of one that may still land.
	inflight []timetable.Fire
	changed  chan struct{}
	// flows are the workflows' schedules by name, handed in by the
	// engine; heldFlows their fires taken ahead, soonest first, held until
	// their instant; pendingFlows the workflows whose catch-up is due.
	flows        map[string]flow
	heldFlows    []timetable.Fire
	pendingFlows map[string]bool

	// beforeSwap, if set, runs inside rescheduleAll, without the lock, once
	// the schedules are worked out and before they replace the heap (tests).
	beforeSwap   func()
	awaitRebuild func() // NextFires is about to wait for a rebuild (tests)
	// rebuilt is closed when the rebuild under way ends (nil: none): one
	// runs at a time (a resync's and a term's start).
	rebuilt chan struct{}

	slowest time.Duration // the slowest recent fire commit, decaying (under mu)
	armed   time.Duration // the lead the timer was armed with (under mu)

	// blocker is the job whose next fire holds staging back (see held), or
	// nil: its ready entry leaving (NoteReady) re-arms the timer at once.
	blocker atomic.Pointer[string]
}

func (p *Producer) init() {
	if p.changed == nil {
		p.t.Replay = p.replay
		p.changed = make(chan struct{}, 1)
		p.reread = make(chan struct{}, 1)
	}
}

// replay is how many missed instants in a row a late fire of job replays:
// a misfire=true job's pending cap (job_state_queue_size), none for a
// misfire=false job (docs/jobs.md: the stall rule).
func (p *Producer) replay(job string) int {
	j, _, ok := p.Catalog.Runnable(job)
	if !ok || !j.Misfire {
		return 0
	}
	if p.Registry != nil && p.Registry.MaxPending() > 0 {
		return p.Registry.MaxPending()
	}
	return maxMissedPerJob
}

// Reschedule recomputes one job's next fire (after a register, update,
// enable, disable or delete) from now. Safe from any goroutine.
func (p *Producer) Reschedule(job string) { p.RescheduleFrom(job, time.Time{}) }

// RescheduleFrom recomputes one job's next fire after a change the
// registry recorded at changed (its gate: registration, update or enable;
// zero: not recorded, from now). The job's fires from the change's commit
// on are due, however late the loop applied it: a loop held for seconds
// as the agents were killed (it handled the engine's disconnection 4.6 s
// after it) applied an enable 4 s after its commit, and a reschedule from
// then lost the fires in between. Those instants are due at
// once, by the job's misfire rule (a misfire=false job fires once for
// them). Never from before the last instant this producer took for the
// job (takenLocked), from now too: a fire staged ahead is taken before
// its instant, and now may still be before it. Nor before the floor.
// Safe from any goroutine.
func (p *Producer) RescheduleFrom(job string, changed time.Time) {
	p.mu.Lock()
	p.init()
	after := changed
	if after.IsZero() {
		after = p.Clock.Now()
	}
	p.scheduleLocked(job, laterOf(laterOf(after, p.takenLocked(job)), p.floor))
	p.mu.Unlock()
	p.poke()
}

// RescheduleAll recomputes every job (after a resync).
func (p *Producer) RescheduleAll() { p.rescheduleAll(p.Clock.Now()) }

// rescheduleAll schedules every job's next fire strictly after `after`,
// and after the instant it last took (afterTakenLocked).
// The schedules are worked out without the producer's lock (at 100,000
// jobs that took 0.7 s at a takeover, and a calendar is a registry read):
// the launcher's round asks NextFireAt, and a term's first round waited on
// the lock. The schedule in force stays until the new one
// replaces it at once; a job scheduled meanwhile by anything else (a
// change, the producer's own take) keeps that schedule, as if it came
// after the rebuild.
func (p *Producer) rescheduleAll(after time.Time) {
	p.mu.Lock()
	for p.rebuilt != nil { // one rebuild at a time
		done := p.rebuilt
		p.mu.Unlock()
		<-done
		p.mu.Lock()
	}
	p.init()
	now := laterOf(after, p.floor)
	p.t.Rebuild()
	done := make(chan struct{})
	p.rebuilt = done
	p.mu.Unlock()
	defer close(done)
	names := p.Catalog.JobNames()
	plans := make([]timetable.Fire, len(names))
	for i, j := range names {
		plans[i] = timetable.Fire{Source: j, Prev: now}
		if at, config, ok := p.next(j, now); ok {
			plans[i].At, plans[i].Config = at, config
		}
	}
	if p.beforeSwap != nil {
		p.beforeSwap()
	}
	p.mu.Lock()
	p.afterTakenLocked(plans)
	p.t.Replace(append(plans, p.flowPlansLocked()...))
	p.rebuilt = nil
	p.mu.Unlock()
	p.poke()
}

func (p *Producer) poke() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// scheduleLocked pushes job's next fire strictly after `after`, bumping
// its generation so older heap entries are ignored (under p.mu).
func (p *Producer) scheduleLocked(source string, after time.Time) {
	p.t.Changed(source, after, p.next)
	if p.calendarUnread(source) {
		p.noteUnplanned(source, after, p.t.Gen(source))
	}
}

// Run handles the fires missed since the last producer's watermark, then
// fires jobs and workflows until ctx ends.
func (p *Producer) Run(ctx context.Context) error {
	p.mu.Lock()
	p.init()
	p.mu.Unlock()
	if !p.readInputs(ctx) {
		return nil
	}
	var follow sync.WaitGroup
	defer follow.Wait()
	follow.Go(func() { p.followInputs(ctx) })
	from := p.catchUp(ctx)
	p.events().CaughtUp(ctx)
	p.mu.Lock()
	p.floor = from  // never fire an instant at or before it again
	p.marked = from // the watermark the catch-up left (an earlier term's is not this one's)
	p.mu.Unlock()
	p.rescheduleAll(from)
	p.events().Loaded(ctx)
	select { // the first arm below covers the load's poke: a second arm could drop a timer that fired in between
	case <-p.changed:
	default:
	}
	timer := p.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.fireFlows(ctx)
		p.arm(timer)
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
		case <-timer.C():
			// The workflows' fires whose instant has come go first: a
			// hand-over never waits, while the jobs' commit may take
			// seconds on a loaded store, and a run (unlike a job's entry,
			// staged a lead ahead) is made only once handed over.
			p.fireFlows(ctx)
			p.fireDue(ctx)
		}
	}
}

func (p *Producer) arm(timer clock.Timer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	timer.Stop()
	lead := p.leadLocked()
	now := p.Clock.Now()
	wait, blocker, ok := p.t.Wake(now, lead)
	if at, held := p.flowWake(); held && (!ok || at.Sub(now) < wait) {
		wait, blocker, ok = max(at.Sub(now), 0), "", true
	}
	if !ok {
		p.blocker.Store(nil)
		timer.Reset(time.Hour)
		return
	}
	p.armed = lead
	if blocker != "" {
		p.blocker.Store(&blocker)
	} else {
		p.blocker.Store(nil)
	}
	timer.Reset(wait)
}

// fireDue commits every fire that is due, in one batch, and schedules each
// job's following fire from its scheduled instant (so fires never drift).
// If the scheduler fell behind by more than one period (a stall, a slow
// commit), a misfire=true job replays each missed instant (up to its
// pending cap), and a misfire=false one skips them: it fires once now and
// then on schedule (timetable.Table.Follow).
func (p *Producer) fireDue(ctx context.Context) {
	now := p.Clock.Now()
	p.staleInputs(now)
	p.mu.Lock()
	lead := max(p.leadLocked(), p.armed) // a lead that shrank since the timer was armed still serves what woke it
	p.mu.Unlock()
	due := p.popDue(now, lead)
	if len(due) == 0 {
		return
	}
	for _, batch := range batches(byInstant(due), maxFireBatch) {
		landed := p.commitFires(ctx, batch, now)
		p.mu.Lock()
		for _, f := range batch {
			if landed[f.Source] {
				p.t.Landed(f)
			}
		}
		p.inflight = p.inflight[min(len(batch), len(p.inflight)):]
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.inflight = nil
	for _, f := range due {
		p.t.Follow(f, now, p.next)
	}
	p.mu.Unlock()
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// popDue takes the jobs' fires to commit now (timetable.Table.Due), and
// holds the workflows' (holdFlows).
func (p *Producer) popDue(now time.Time, lead time.Duration) []timetable.Fire {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight = p.holdFlows(p.t.Due(now, lead, p.next))
	return p.inflight
}
