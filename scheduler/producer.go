package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
	"github.com/ejcloud/elasticjob/store"
)

// Dispatcher commits what the producer decided: due cron fires as ready
// entries (absent, when set, says which jobs are believed to have none, so
// their entries are created without a read first), and at start the fires
// missed while no leader fired. The registry is the product's; a test may
// stand in its own.
//
// TriggerFires and TriggerMissed are given the same commit id on every
// try of one commit (and another for every commit): a try after one that
// failed part way or whose outcome was unknown must not add the fires
// again that one committed (registry's TriggerFiresOnce and
// TriggerMissedOnce).
type Dispatcher interface {
	TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) (void []string, err error)
	TriggerMissed(ctx context.Context, missed map[string]registry.Missed, now time.Time, commit string) error
}

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

// Producer turns cron fires into ready-queue entries. One heap of next fire
// times and one timer serve every job (no goroutine per job). Leader-only:
// run it under the leader context.
type Producer struct {
	Registry *registry.Registry
	// Dispatch commits the fires (nil: Registry).
	Dispatch Dispatcher
	Catalog  *Catalog
	Clock    clock.Clock
	Location *time.Location // the scheduler's default time zone
	Log      *slog.Logger
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
	umu    sync.Mutex    // guards unplanned
	// unplanned are the jobs whose calendar the inputs did not hold
	// (noteUnplanned): planned again once a read brings new calendars.
	unplanned map[string]unplannedAt

	mu     sync.Mutex      // the producer's one lock: everything below
	floor  time.Time       // fires at or before it were handled by an earlier producer or the catch-up
	marked time.Time       // the watermark this producer last committed (commitFires: it never goes back)
	t      timetable.Table // the next fires, the staged ones, the ready entries believed present
	// inflight are the fires taken and not yet committed (popDue to
	// fireDue's commits): RescheduleFrom never schedules again an
	// instant of one that may still land.
	inflight []timetable.Fire
	changed  chan struct{}

	// beforeSwap, if set, runs inside rescheduleAll, without the lock, once
	// the schedules are worked out and before they replace the heap (tests).
	beforeSwap   func()
	awaitRebuild func() // NextFires is about to wait for a rebuild (tests)
	rebuildMu    sync.Mutex
	// rebuilt is closed when the rebuild under way ends (nil: none).
	rebuilt chan struct{}

	slowest time.Duration // the slowest recent fire commit, decaying (under mu)
	armed   time.Duration // the lead the timer was armed with (under mu)

	// blocker is the job whose next fire holds staging back (see held), or
	// nil: its ready entry leaving (NoteReady) re-arms the timer at once.
	blocker atomic.Pointer[string]
}

// maxLead bounds how far ahead of their instant fires are staged. On
// ZooKeeper a fire commit waits behind the launch loop's chained multis
// (the session and the server's write pipeline are in order): at 100,000
// jobs on a loaded machine they took 0.6-1.5 s, and a bound of 1 s left
// fires late by the rest. A staged entry is held back until its instant
// (NotBefore), and disabling, updating or deleting the job in between
// clears it like any pending execution (docs/jobs.md).
const maxLead = 5 * time.Second

// leadLocked is how far ahead of their instant fires are staged now: Lead, or
// twice the slowest recent commit if that is longer (under p.mu).
func (p *Producer) leadLocked() time.Duration {
	return max(p.Lead, min(2*p.slowest, maxLead))
}

// noteCommit feeds one commit's duration into the lead: the slowest recent
// one counts, older ones fade by a hundredth per commit. Commits come about
// once a second on a busy cluster (one per instant with fires), and their
// durations jump between a tenth and the whole of the slowest as they meet
// launch rounds in the store's group commit: fading by a tenth left the
// lead below the next slow commit within seconds (the simulated cluster's
// late fires: the lead had shrunk to 250 ms when a 470 ms commit came); by
// a hundredth, the lead still covers a slow commit a minute later.
func (p *Producer) noteCommit(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slowest = max(d, p.slowest-p.slowest/100)
}

// NoteReady records what the store's watch says of /state/ready/{job}.
func (p *Producer) NoteReady(job string, present bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.NoteQueued(job, present)
	if b := p.blocker.Load(); !present && b != nil && *b == job {
		p.poke() // its held fire may be staged now
	}
}

func (p *Producer) believedAbsent(job string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t.BelievedAbsent(job)
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
// job (the old configuration may have fired it since the change: its gate
// let it through) nor before the floor. Safe from any goroutine.
func (p *Producer) RescheduleFrom(job string, changed time.Time) {
	p.mu.Lock()
	p.init()
	after := p.Clock.Now()
	if !changed.IsZero() {
		after = laterOf(changed, laterOf(p.t.LastTaken(job), p.landingLocked(job)))
	}
	p.scheduleLocked(job, laterOf(after, p.floor))
	p.mu.Unlock()
	p.poke()
}

// landingLocked is the latest instant of job's fires in flight that may
// still land: those computed from the configuration the catalog holds now
// (or from an unknown one). A fire computed from a configuration since
// replaced is void when it commits (registry.CronFire.Config): its
// instant is the new configuration's to fire (under p.mu).
func (p *Producer) landingLocked(job string) time.Time {
	var last time.Time
	for _, f := range p.inflight {
		if f.Source != job {
			continue
		}
		if _, config, _ := p.Catalog.runnableStored(job); f.Config == 0 || config == 0 || f.Config == config {
			last = laterOf(last, f.At)
		}
	}
	return last
}

// RescheduleAll recomputes every job (after a resync).
func (p *Producer) RescheduleAll() { p.rescheduleAll(p.Clock.Now()) }

// rescheduleAll schedules every job's next fire strictly after `after`.
// The schedules are worked out without the producer's lock (at 100,000
// jobs that took 0.7 s at a takeover, and a calendar is a registry read):
// the launcher's round asks NextFireAt, and a term's first round waited on
// the lock. The schedule in force stays until the new one
// replaces it at once; a job scheduled meanwhile by anything else (a
// change, the producer's own take) keeps that schedule, as if it came
// after the rebuild.
func (p *Producer) rescheduleAll(after time.Time) {
	p.rebuildMu.Lock() // one rebuild at a time (a resync's and a term's start)
	defer p.rebuildMu.Unlock()
	p.mu.Lock()
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
	p.t.Replace(plans)
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
func (p *Producer) scheduleLocked(job string, after time.Time) {
	p.t.Changed(job, after, p.next)
	if p.calendarUnread(job) {
		p.noteUnplanned(job, after, p.t.Gen(job))
	}
}

// calendarUnread reports a runnable job naming a calendar the inputs do
// not hold (yet: made since they were read, or gone).
func (p *Producer) calendarUnread(job string) bool {
	j, _, ok := p.Catalog.runnableStored(job)
	in := p.inputs.Load()
	if !ok || in == nil || j.Calendar == "" || !j.HasSchedule() {
		return false
	}
	_, held := in.Calendars[timing.CalendarKey(namespace.Of(j.JobName), j.Calendar)]
	return !held
}

// next is the job's schedule: its next fire strictly after `after`, for a
// transient job that may run.
func (p *Producer) next(job string, after time.Time) (time.Time, uint64, bool) {
	j, config, ok := p.Catalog.runnableStored(job)
	if !ok || j.JobExecutionType != jobs.Transient {
		return time.Time{}, 0, false
	}
	at, ok := p.nextFire(j, after)
	return at, config, ok
}

func (p *Producer) nextFire(j jobs.Config, after time.Time) (time.Time, bool) {
	in := p.inputs.Load()
	if in == nil { // not read yet: no instant is planned without its calendar
		return time.Time{}, false
	}
	pl, loc, err := in.Plan(j.Timing(), p.Catalog.parse)
	if err != nil || pl == nil {
		if err != nil {
			p.Log.Warn("job not scheduled", "job", j.JobName, "err", err)
		}
		return time.Time{}, false
	}
	next := pl.Next(after, loc)
	return next, !next.IsZero()
}

// NextFires lists the next fire of each job keep accepts, at or before
// until, soonest first (a job has one next fire: it never runs two
// executions at once; a fire staged ahead and not yet due is its job's
// next). While every job's schedule is worked out again it waits for the
// new one. Safe from any goroutine.
func (p *Producer) NextFires(until time.Time, keep func(job string) bool) []round.Fire {
	p.mu.Lock()
	if done := p.rebuilt; done != nil {
		// Capacities reserve room for these fires: a rebuild's half-known
		// schedule would reserve too little. Wait for it, as the lock did.
		p.mu.Unlock()
		if p.awaitRebuild != nil {
			p.awaitRebuild()
		}
		<-done
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	return p.t.NextFires(p.Clock.Now(), until, keep)
}

// NextFireAt is the soonest instant of a next fire of any job, a fire
// staged ahead whose instant has not come included (ok false: none). It
// may be a job's fire since superseded (an update): never later than the
// real soonest. While every job's schedule is worked out again (a term's
// start, a resync) it is not known: a fire may come at any moment. Safe
// from any goroutine.
func (p *Producer) NextFireAt() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	if p.t.Rebuilding() {
		return now.Add(time.Millisecond), true
	}
	return p.t.NextFireAt(now)
}

// Run handles the fires missed since the last producer's watermark, then
// fires jobs until ctx ends.
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
		p.arm(timer)
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
		case <-timer.C():
			p.fireDue(ctx)
		}
	}
}

func (p *Producer) arm(timer clock.Timer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	timer.Stop()
	lead := p.leadLocked()
	wait, blocker, ok := p.t.Wake(p.Clock.Now(), lead)
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

// byInstant splits due fires (in heap order) into groups of one instant.
func byInstant(due []timetable.Fire) [][]timetable.Fire {
	var out [][]timetable.Fire
	for i := 0; i < len(due); {
		j := i + 1
		for j < len(due) && due[j].At.Equal(due[i].At) {
			j++
		}
		out = append(out, due[i:j])
		i = j
	}
	return out
}

// lateWarn is how late a commit of fires is logged as a warning (the
// lateness goal, docs/scheduling.md); later than their instant by less, at
// debug level.
const lateWarn = 10 * time.Millisecond

// maxFireBatch bounds the fires of several instants committed together
// (one instant's fires are never split): on ZooKeeper one commit is one
// multi, which must stay well under its 1 MB request limit (a ready
// entry's write is ~250 bytes).
const maxFireBatch = 2048

// commitRetryMin and commitRetryMax bound the wait between tries of a
// fire commit the store refused.
const (
	commitRetryMin = 100 * time.Millisecond
	commitRetryMax = 2 * time.Second
)

// batches joins consecutive instants' groups into commits of at most max
// fires (a larger group alone). Every commit waits its turn behind the
// writes queued before it (on ZooKeeper the launch loop's multis, on the
// same session and the server's one write pipeline), so a commit per
// instant fell further behind every second once commits took longer than
// one: a wake commits what is due in as few commits as fit.
func batches(groups [][]timetable.Fire, max int) [][]timetable.Fire {
	var out [][]timetable.Fire
	for _, g := range groups {
		if n := len(out); n > 0 && len(out[n-1])+len(g) <= max {
			out[n-1] = append(out[n-1], g...)
			continue
		}
		out = append(out, slices.Clone(g))
	}
	return out
}

// commitFires commits due fires (in heap order, one or more instants) in
// one batch; each entry is launchable from its own instant, or at once
// when that has passed. landed names the jobs whose fire is pending now.
func (p *Producer) commitFires(ctx context.Context, due []timetable.Fire, woke time.Time) (landed map[string]bool) {
	now := p.Clock.Now()
	batch := make(map[string]registry.CronFire, len(due))
	for _, f := range due {
		if j, _, ok := p.Catalog.Runnable(f.Source); ok {
			// late: launchable at once; gated on the job's change node, so
			// it never lands after a disable or for an instant before an
			// update or enable (registry/gate.go); and on the stored
			// configuration its instant was computed from, so an instant of
			// a cron since replaced never fires, however late the loop
			// applies the change
			batch[f.Source] = registry.CronFire{Misfire: j.Misfire, At: laterOf(now, f.At), Instant: f.At, Config: f.Config}
		}
	}
	first, last := due[0].At, due[len(due)-1].At
	began := p.Clock.Now()
	void, ended, ok := p.commitUntilDone(ctx, batch, last, began)
	if !ok {
		return nil
	}
	if late := ended.Sub(first); late > 0 {
		p.mu.Lock()
		lead := p.leadLocked()
		p.mu.Unlock()
		level := slog.LevelDebug
		if late >= lateWarn {
			level = slog.LevelWarn
		}
		p.Log.Log(ctx, level, "producer: fires committed after their instant", "jobs", len(batch), "instant", first, "last_instant", last,
			"late_by", late, "commit_took", ended.Sub(began), "began_before_instant", first.Sub(began),
			"woke_before_instant", first.Sub(woke), "lead", lead)
	}
	for _, job := range void { // the job went off or changed before the commit: nothing pending
		if f := batch[job]; f.Config != 0 {
			switch _, config, ok := p.Catalog.runnableStored(job); {
			case ok && config == f.Config:
				p.events().Stale(ctx, job, f.Config)
			case ok && config != 0:
				p.replaced(ctx, job)
			}
		}
		delete(batch, job)
	}
	p.dropUnrunnable(ctx, batch)
	landed = make(map[string]bool, len(batch))
	for job := range batch {
		p.NoteReady(job, true)
		landed[job] = true
	}
	p.report(due, batch)
	return landed
}

// replaced reschedules job, whose fire was void because its configuration
// was replaced after the fire was computed (the catalog holds the new one),
// from the replacement's recorded instant: the instants after it are the
// new configuration's to fire. The loop's own reschedule for the change
// (RescheduleFrom) may come only after the job's next fire was taken (a
// loop held past a period), and the instant of the void fire was then
// lost. Without the instant recorded (or read), the loop's reschedule
// decides alone.
func (p *Producer) replaced(ctx context.Context, job string) {
	if p.Registry == nil {
		return
	}
	at, err := p.Registry.Config().JobChangedAt(ctx, job)
	if err != nil || at.IsZero() {
		return
	}
	p.RescheduleFrom(job, at)
}

// commitUntilDone commits batch, whose latest instant is last, retrying
// until it commits (ok) or ctx ends. A store refusing writes (a full
// disk, an unreachable server) would lose these instants' fires for good:
// the term goes on, so no catch-up replays them; the next leader's
// catch-up counts them if the term ends first (the watermark did not
// move), as when a full disk fails the fire commit.
//
// The watermark never goes back: fires for an instant before one already
// committed (a job enabled or updated late, scheduled from its change's
// instant; a job registered after later instants were staged ahead)
// commit under the watermark already written, else a takeover would
// replay instants the registry already holds (TestWatermarkNeverGoesBack).
func (p *Producer) commitUntilDone(ctx context.Context, batch map[string]registry.CronFire, last, began time.Time) (void []string, ended time.Time, ok bool) {
	p.mu.Lock()
	mark := laterOf(last, p.marked)
	p.mu.Unlock()
	id := commitID() // one for every try: a try that landed though it failed is not repeated
	for wait := commitRetryMin; ; wait = min(2*wait, commitRetryMax) {
		var err error
		void, err = p.dispatcher().TriggerFires(store.Urgent(ctx), batch, mark, id, p.absentHint()) // not behind the launch loop's multis (store/zk)
		ended = p.Clock.Now()
		p.noteCommit(ended.Sub(began))
		if err == nil {
			break
		}
		p.Log.Error("producer: commit fires; retrying", "jobs", len(batch), "err", err, "retry_in", wait)
		t := p.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ended, false
		case <-t.C():
		}
	}
	p.mu.Lock()
	p.marked = laterOf(p.marked, mark)
	p.mu.Unlock()
	return void, ended, true
}

// commitID names one fire commit, the same on each of its tries (128
// random bits: unique among the commits of every term).
func commitID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// dropUnrunnable clears the fires just committed for jobs the catalog
// sees as not runnable. A job's own disable, update or deregister cannot
// let a fire land after it (the fire's commit checks the job's gate:
// registry/gate.go); what the gate does not cover is the job's app going
// off (its disable, its removal) while the commit was in flight, whose
// clearing (configFollower) may have landed before this commit: the fire
// would stay pending until the app came back, to start then however late.
// The catalog takes a change before the follower clears the queues, so a
// commit landing after that clearing finds the job not runnable here.
func (p *Producer) dropUnrunnable(ctx context.Context, batch map[string]registry.CronFire) {
	if p.Registry == nil {
		return
	}
	for job := range batch {
		if _, _, ok := p.Catalog.Runnable(job); ok {
			continue
		}
		if err := p.Registry.Change().DropReady(job).Commit(ctx); err != nil {
			p.Log.Warn("producer: clear a fire committed as its job went off", "job", job, "err", err)
			continue
		}
		delete(batch, job)
		p.NoteReady(job, false)
	}
}

func (p *Producer) report(due []timetable.Fire, batch map[string]registry.CronFire) {
	committed := p.Clock.Now()
	names := make([]string, 0, len(batch))
	for _, f := range due {
		if _, ok := batch[f.Source]; ok {
			names = append(names, f.Source)
			p.events().Committed(f.Source, f.At, laterOf(committed, f.At))
		}
	}
	if len(names) > 0 {
		p.events().Fired(names)
	}
}

// absentHint is the belief used for blind creates, once the belief is fed
// by a watch (nil before: every fire reads first).
func (p *Producer) absentHint() func(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.t.Believes() {
		return nil
	}
	return p.believedAbsent
}

func (p *Producer) dispatcher() Dispatcher {
	if p.Dispatch != nil {
		return p.Dispatch
	}
	return registryDispatcher{p.Registry}
}

// registryDispatcher commits fires to the registry: live fires through
// its leader's work, missed ones through the schedule.
type registryDispatcher struct{ r *registry.Registry }

func (d registryDispatcher) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(job string) bool) ([]string, error) {
	return d.r.Work().TriggerFiresOnce(ctx, fires, instant, commit, absent)
}

func (d registryDispatcher) TriggerMissed(ctx context.Context, missed map[string]registry.Missed, now time.Time, commit string) error {
	return d.r.Schedule().TriggerMissedOnce(ctx, missed, now, commit)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// popDue takes the fires to commit now (timetable.Table.Due).
func (p *Producer) popDue(now time.Time, lead time.Duration) []timetable.Fire {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight = p.t.Due(now, lead, p.next)
	return p.inflight
}
