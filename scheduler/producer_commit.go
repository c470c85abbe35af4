package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/registry"
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
