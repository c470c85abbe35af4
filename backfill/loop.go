package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Every is how often the Loop advances the backfills (default).
const Every = 200 * time.Millisecond

// Retention is how long an ended backfill is kept (its record, instants
// and the marks of the instants it queued) before the loop forgets it;
// from then on a new backfill may queue those instants again.
const Retention = 7 * 24 * time.Hour

// maxSkips bounds the instants one pass walks past that other backfills
// queued already.
const maxSkips = 1000

// Loop is the leader's loop advancing every backfill. Create one per term
// over the term's fenced registry.
type Loop struct {
	Registry *registry.Registry
	Clock    clock.Clock
	Log      *slog.Logger
	Every    time.Duration // 0: Every
	// Wake tells the launcher a run was queued (may be nil).
	Wake func()

	instants map[string][]time.Time // by backfill id: written once
}

// Run advances the backfills every l.Every until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	every := l.Every
	if every <= 0 {
		every = Every
	}
	t := l.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if err := l.Pass(ctx); err != nil && ctx.Err() == nil {
			l.Log.Warn("backfill: pass skipped", "err", err)
		}
		t.Reset(every)
	}
}

// Pass advances every backfill not ended once.
func (l *Loop) Pass(ctx context.Context) error {
	stored, err := l.Registry.Schedule().Backfills(ctx)
	if err != nil {
		return fmt.Errorf("backfill: list: %w", err)
	}
	var live []Backfill
	for _, s := range stored {
		b, err := Decode(s)
		if err != nil {
			l.Log.Warn("backfill: record skipped", "path", s.Path(), "err", err)
			continue
		}
		if !b.Final() {
			live = append(live, b)
			continue
		}
		if l.expired(b) {
			if err := l.Registry.Schedule().ForgetBackfill(ctx, b.ID, b.Key(), b.IsWorkflow(), b.Version); err != nil {
				if errors.Is(err, registry.ErrFenced) {
					return err
				}
				l.Log.Warn("backfill: not forgotten", "id", b.ID, "err", err)
				continue
			}
			delete(l.instants, b.ID)
			l.Log.Info("backfill: forgotten", "id", b.ID, "ended", b.EndedAt)
		}
	}
	if len(live) == 0 {
		return nil
	}
	st, err := l.state(ctx)
	if err != nil {
		return err
	}
	queued := false
	for _, b := range live {
		q, err := l.advance(ctx, b, st)
		if errors.Is(err, registry.ErrFenced) {
			return err
		}
		if err != nil {
			l.Log.Warn("backfill: not advanced", "id", b.ID, "err", err)
		}
		queued = queued || q
	}
	if queued && l.Wake != nil {
		l.Wake()
	}
	return nil
}

// expired reports whether an ended backfill is past its retention.
func (l *Loop) expired(b Backfill) bool {
	ended := b.EndedAt
	if ended.IsZero() {
		ended = b.UpdatedAt
	}
	return !ended.IsZero() && l.Clock.Now().Sub(ended) > Retention
}

// Decode reads a stored record (its Version is the store's).
func Decode(s registry.Stored) (Backfill, error) {
	var b Backfill
	if err := s.Decode(&b); err != nil {
		return b, fmt.Errorf("backfill: %w", err)
	}
	b.Version = s.Version()
	return b, nil
}

// advance applies one Step to b and queues what it says.
func (l *Loop) advance(ctx context.Context, b Backfill, st *snapshot) (bool, error) {
	if b.IsWorkflow() {
		return l.advanceWorkflow(ctx, b, st)
	}
	now := l.Clock.Now()
	_, why, err := l.Registry.Config().CanRun(ctx, b.Key())
	if err != nil {
		return false, err
	}
	spare, err := st.spare(ctx, l.Registry, b.Key())
	if err != nil {
		return false, err
	}
	v := View{Now: now, Outcome: func(key string) Outcome { return st.outcome(ctx, l.Registry, key) },
		Busy: st.busy(b.Key()) || !spare, Runnable: why == jobs.Runnable, Missing: why == jobs.JobMissing}
	next, n := Step(b, v)
	queued, dirty, err := l.queueNext(ctx, b, &next, n, now, func(at time.Time) (string, string, error) {
		key := b.RunKey(at)
		owner, err := l.Registry.Schedule().EnqueueBackfillRun(ctx, registry.BackfillRun{ID: b.ID, Job: b.Key(), Instant: at, Key: key, Param: st.param(ctx, l.Registry, b.Key()),
			Redo: func(ctx context.Context, owner string) (bool, error) { return st.failedBy(ctx, l.Registry, owner, at) }}, now)
		return key, owner, err
	})
	if err != nil {
		return false, err
	}
	return l.save(ctx, b, next, dirty, queued)
}

// queueNext queues, when Step allows n more runs, the backfill's next
// instant through enqueue (which returns the run's key and the backfill
// that owns the instant), walking past at most maxSkips instants other
// backfills queued already; next records what it did. queued: a run of
// b's was queued; dirty: next differs from b.
func (l *Loop) queueNext(ctx context.Context, b Backfill, next *Backfill, n int, now time.Time,
	enqueue func(at time.Time) (key, owner string, err error)) (queued, dirty bool, err error) {
	dirty = changed(b, *next)
	if n <= 0 {
		return false, dirty, nil
	}
	ins, err := l.instantsOf(ctx, b.ID)
	if err != nil {
		return false, dirty, err
	}
	for skips := 0; next.Next < next.Total && next.Next < len(ins) && skips <= maxSkips; skips++ {
		at := ins[next.Next]
		key, owner, err := enqueue(at)
		if err != nil {
			return false, dirty, err
		}
		next.Next++
		next.UpdatedAt, dirty = now, true
		if owner == b.ID {
			next.InFlight = append(next.InFlight, Flight{At: at, Key: key})
			return true, dirty, nil
		}
		next.Skipped++ // another backfill ran this instant
	}
	return false, dirty, nil
}

// save writes a pass's progress (when it changed) under the version the
// pass read, and reports whether the pass queued a run. A conflict is a
// pause or cancel meanwhile: the next pass sees it (a run queued is found
// again by its instant).
func (l *Loop) save(ctx context.Context, b, next Backfill, dirty, queued bool) (bool, error) {
	if !dirty {
		return queued, nil
	}
	raw, _ := json.Marshal(next)
	err := l.Registry.Schedule().SetBackfill(ctx, b.ID, raw, b.Version)
	if errors.Is(err, store.ErrConflict) {
		return queued, nil
	}
	return queued, err
}

func (l *Loop) instantsOf(ctx context.Context, id string) ([]time.Time, error) {
	if ins, ok := l.instants[id]; ok {
		return ins, nil
	}
	raw, err := l.Registry.Schedule().BackfillInstants(ctx, id)
	if err != nil {
		return nil, err
	}
	var us []int64
	if err := json.Unmarshal(raw, &us); err != nil {
		return nil, fmt.Errorf("backfill: decode %s's instants: %w", id, err)
	}
	if l.instants == nil {
		l.instants = map[string][]time.Time{}
	}
	l.instants[id] = DecodeInstants(us)
	return l.instants[id], nil
}

// IsRunKey reports whether an idempotency key is a backfill run's.
func IsRunKey(key string) bool { return registry.IsBackfillRunKey(key) }
