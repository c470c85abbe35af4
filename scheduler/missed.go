package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// maxMissedPerJob bounds the fires counted for one misfire=true job when
// no pending cap is set.
const maxMissedPerJob = 10_000

// catchUp handles the cron fires no leader fired: those scheduled after
// the watermark the last producer committed (/state/producer/fired_until),
// and after the job's registration or last config change when later, up
// to now, for instance while leadership moved or the scheduler was down. Each
// job's misfire rule decides, exactly once: misfire=false queues one
// execution for all of them, misfire=true one per fire (up to the pending
// cap). It returns the instant from which the producer schedules: the
// later of now and the watermark (fires staged ahead by the previous
// leader are not fired again). Without a watermark (a first start) nothing
// is replayed, and the start is recorded as the watermark.
//
// A registry that refuses the read or the write (a server out of reach, a
// lost quorum, a full disk) is tried again, waiting commitRetryMin doubling
// to commitRetryMax, until it answers or the term ends: giving up while the
// term goes on would lose the missed fires for good, as this term's first
// fire commit moves the watermark past them.
//
// Once its missed fires are counted, every try commits those, up to the
// same instant, under one id (registry's TriggerMissedOnce): a try that
// failed part way (a batch of jobs committed, a later one refused) or
// landed with an unknown outcome is not repeated for the jobs it queued.
// The fires after that instant are the producer's own, late by the retries.
func (p *Producer) catchUp(ctx context.Context) time.Time {
	var plan *catchUpPlan
	for wait := commitRetryMin; ; wait = min(2*wait, commitRetryMax) {
		from, err := p.catchUpOnce(ctx, &plan)
		if err == nil || ctx.Err() != nil {
			return from
		}
		p.Log.Error("producer: catch-up of missed fires; retrying", "err", err, "retry_in", wait)
		t := p.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return p.Clock.Now()
		case <-t.C():
		}
	}
}

// catchUpPlan is a catch-up's missed fires, counted up to now, and the id
// its every try commits them under.
type catchUpPlan struct {
	missed map[string]registry.Missed
	now    time.Time
	id     string
	since  time.Time // the watermark they were counted from
	total  int       // fires
}

// catchUpOnce is one try of catchUp: it counts the missed fires into
// *plan unless a try before did, and commits them. An error leaves the
// watermark where it was, so the try can be repeated.
func (p *Producer) catchUpOnce(ctx context.Context, plan **catchUpPlan) (time.Time, error) {
	if *plan == nil {
		from, pl, err := p.planCatchUp(ctx)
		if err != nil || pl == nil {
			return from, err
		}
		*plan = pl
		names := make([]string, 0, len(pl.missed))
		for n := range pl.missed {
			names = append(names, n)
		}
		p.events().Counted(ctx, names)
	}
	pl := *plan
	if err := p.dispatcher().TriggerMissed(ctx, pl.missed, pl.now, pl.id); err != nil {
		return pl.now, fmt.Errorf("queue missed fires of %d jobs: %w", len(pl.missed), err)
	}
	if len(pl.missed) > 0 {
		p.Log.Info("queued fires missed while no leader fired", "since", pl.since, "jobs", len(pl.missed), "fires", pl.total)
		names := make([]string, 0, len(pl.missed))
		for n := range pl.missed {
			names = append(names, n)
			p.NoteReady(n, true)
		}
		p.events().Fired(names)
	}
	return pl.now, nil
}

// planCatchUp reads the watermark and counts the fires missed since, up
// to now (a nil plan: nothing to commit, from is where the producer
// starts).
func (p *Producer) planCatchUp(ctx context.Context) (from time.Time, plan *catchUpPlan, err error) {
	now := p.Clock.Now()
	w, err := p.Registry.Schedule().Watermark(ctx)
	if err != nil {
		return now, nil, fmt.Errorf("read the fire watermark: %w", err)
	}
	if w.CopyBehind {
		p.Log.Warn("producer: the registry copy held an earlier fire watermark than the store; using the store's",
			"copy", w.CopyUntil, "store", w.Until)
	}
	mark, ok := w.Until, w.OK
	if !ok {
		// No producer has recorded a watermark yet: a new registry, or
		// every earlier term ended before its first fire committed (a
		// lease lost during that commit). This start becomes the mark, so
		// that if this term too ends before its first fire commits, the
		// next leader replays that fire instead of starting from its own
		// clock without one.
		if err := p.Registry.Schedule().TriggerMissed(ctx, nil, now); err != nil {
			return now, nil, fmt.Errorf("record the fire watermark: %w", err)
		}
		return now, nil, nil
	}
	if !mark.Before(now) {
		if mark.After(now) {
			return mark, nil, nil
		}
		return now, nil, nil
	}
	limit := p.Registry.MaxPending()
	if limit <= 0 {
		limit = maxMissedPerJob
	}
	missed, total := p.countMissed(ctx, mark, now, limit)
	return now, &catchUpPlan{missed: missed, now: now, id: commitID(), since: mark, total: total}, nil
}

// countMissed counts each runnable TRANSIENT job's fires in (mark, now],
// at most limit. A job registered or changed after the mark counts from
// then: its config's fires before that were another config's (a change
// clears what is pending, so they would not run had a leader fired them),
// or no job's at all. Without the record, from the mark. Only a job with a
// fire after the mark can have one after its change: those are looked up
// (reading every job's records took 60 % of a catch-up's count at 100,000
// jobs, BenchmarkCatchUp100k).
func (p *Producer) countMissed(ctx context.Context, mark, now time.Time, limit int) (map[string]registry.Missed, int) {
	missed := map[string]registry.Missed{}
	var names []string
	for _, name := range p.Catalog.JobNames() {
		j, _, ok := p.Catalog.Runnable(name)
		if !ok || j.JobExecutionType != jobs.Transient {
			continue
		}
		if at := p.missedFires(j, mark, now, limit, j.Misfire); len(at) > 0 {
			missed[name] = registry.Missed{Fires: len(at), Misfire: j.Misfire, After: mark, Instants: at} // behind the job's gate (registry/gate.go)
			names = append(names, name)
		}
	}
	changed, err := p.Registry.Config().JobsChangedAtOf(ctx, names)
	if err != nil {
		p.Log.Warn("producer: read when jobs last changed; counting missed fires from the watermark", "err", err)
	}
	total := 0
	for _, name := range names {
		m := missed[name]
		if c, ok := changed[name]; ok && c.After(mark) {
			j, _, _ := p.Catalog.Runnable(name)
			m.After, m.Instants = c, p.missedFires(j, c, now, limit, j.Misfire)
			if m.Fires = len(m.Instants); m.Fires == 0 {
				delete(missed, name)
				continue
			}
			missed[name] = m
		}
		total += m.Fires
	}
	return missed, total
}

// missedFires lists j's fire instants in (from, to], at most limit, by
// the misfire rule (timetable.Missed): the instants the catch-up's
// executions serve (queue.Ready.Nominal).
func (p *Producer) missedFires(j jobs.Config, from, to time.Time, limit int, misfire bool) []time.Time {
	return timetable.Missed(func(after time.Time) (time.Time, bool) { return p.nextFire(j, after) }, from, to, limit, misfire)
}
