package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// Registry is what the collector reads from the registry
// (*registry.Registry).
type Registry interface {
	RunningTasks(ctx context.Context) (map[string]map[int]task.Entry, error)
	// JobKeys lists every namespace's jobs (namespace.Key), Namespaces
	// every namespace: the statistics are counted per namespace.
	JobKeys(ctx context.Context) ([]string, error)
	Namespaces(ctx context.Context) ([]namespace.Record, error)
}

// RegistryOf is reg's facades the collector reads.
func RegistryOf(reg *registry.Registry) Registry {
	return struct {
		registry.Work
		registry.Config
		registry.Tenancy
	}{reg.Work(), reg.Config(), reg.Tenancy()}
}

// catchUpLimit bounds how far back a starting collector aggregates hours
// and days that no leader aggregated.
const catchUpLimit = 8 * 24 * time.Hour

// stopFlushTimeout bounds the flush of the partial minute when Run stops.
const stopFlushTimeout = 5 * time.Second

// counts are one minute's task results.
type counts struct{ success, failed int }

// minuteOf is a namespace's minute.
type minuteOf struct {
	ns     string
	minute time.Time
}

// Collector writes the statistics tables on the leader. It is also the
// scheduler's Observer for task results; its Run is a leader-only loop.
type Collector struct {
	store *Store
	reg   Registry
	log   *slog.Logger

	mu      sync.Mutex
	pending map[minuteOf]counts // by namespace and minute, not yet written

	// Loop-owned: the first hour and day not aggregated yet (zero: ask the
	// tables), and the last day with a registered-jobs row.
	hourNext, dayNext, registerDone time.Time

	ticked chan<- time.Time // tests: told after every tick
}

var _ observe.Tasks = (*Collector)(nil)

// NewCollector makes a collector writing through s (whose clock and zone it
// uses) and reading reg.
func NewCollector(s *Store, reg Registry, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Collector{store: s, reg: reg, log: log, pending: map[minuteOf]counts{}}
}

// outcomeOf classifies a terminal state as the original's statistics did: FINISHED is a
// success, a failure state a failure, and a killed task neither.
func outcomeOf(s task.State) (success, failure bool) { return s == task.Finished, s.Failure() }

// StatusChanged counts a finished or failed task in the current minute.
func (c *Collector) StatusChanged(ev observe.TaskEvent, st engine.Status) {
	ok, failed := outcomeOf(st.State)
	if !ok && !failed {
		return
	}
	job := ev.Job
	if job == "" {
		job, _, _ = strings.Cut(ev.TaskID, "@-@")
	}
	m := minuteOf{namespace.Of(job), floor(c.store.clock.Now(), view.Minute, c.store.loc)}
	c.mu.Lock()
	n := c.pending[m]
	if ok {
		n.success++
	} else {
		n.failed++
	}
	c.pending[m] = n
	c.mu.Unlock()
}

func (c *Collector) Launched(observe.TaskEvent)                    {}
func (c *Collector) clk() clock.Clock                              { return c.store.clock }
func (c *Collector) floor(t time.Time, iv view.Interval) time.Time { return floor(t, iv, c.store.loc) }

// Run writes the statistics until ctx ends (the leader context). It first
// catches up: it aggregates the complete hours and days the previous leader
// left (recomputing the last one, which is idempotent) and writes today's
// registered-jobs row and this minute's running snapshot if missing. Then,
// at every minute boundary, it flushes the finished minutes' counts, takes
// the running snapshot, and aggregates the hour and day that just ended.
// When ctx ends it flushes what it counted, the current minute included.
// Database errors are logged and retried at the next tick (counts stay in
// memory); Run returns only when ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	defer c.finalFlush(ctx)
	now := c.clk().Now()
	c.tick(ctx, now, false)
	t := c.clk().NewTimer(c.untilNextMinute(now))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			now := c.clk().Now()
			c.tick(ctx, now, true)
			t.Reset(c.untilNextMinute(now))
		}
	}
}

func (c *Collector) untilNextMinute(now time.Time) time.Duration {
	return next(c.floor(now, view.Minute), view.Minute, c.store.loc).Sub(now)
}

func (c *Collector) finalFlush(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopFlushTimeout)
	defer cancel()
	if err := c.flush(fctx, time.Time{}); err != nil {
		c.log.Warn("statistics: flush on stop", "err", err)
	}
}

// tick does one minute's work; each step runs even when another failed.
func (c *Collector) tick(ctx context.Context, now time.Time, flush bool) {
	minute := c.floor(now, view.Minute)
	var errs []error
	if flush {
		errs = append(errs, c.flush(ctx, minute))
	}
	errs = append(errs, c.snapshotRunning(ctx, minute), c.aggregate(ctx, now), c.register(ctx, now))
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		c.log.Warn("statistics: tick", "err", err)
	}
	if c.ticked != nil {
		c.ticked <- now
	}
}

// flush writes the pending minutes before `before` (all when zero) into
// TASK_RESULT_STATISTICS_MINUTE, adding to a row the minute already has.
// Minutes that fail stay pending.
func (c *Collector) flush(ctx context.Context, before time.Time) error {
	c.mu.Lock()
	batch := map[minuteOf]counts{}
	for m, n := range c.pending {
		if before.IsZero() || m.minute.Before(before) {
			batch[m] = n
			delete(c.pending, m)
		}
	}
	c.mu.Unlock()
	var errs []error
	for m, n := range batch {
		if err := c.store.addResult(ctx, m.ns, m.minute, n, c.clk().Now()); err != nil {
			errs = append(errs, err)
			c.mu.Lock()
			p := c.pending[m]
			c.pending[m] = counts{p.success + n.success, p.failed + n.failed}
			c.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// snapshotRunning writes this minute's running tasks and jobs (once), per
// namespace: the default one's always, another's when it runs something
// (a missing minute reads as zero).
func (c *Collector) snapshotRunning(ctx context.Context, minute time.Time) error {
	all, err := c.reg.RunningTasks(ctx)
	if err != nil {
		return fmt.Errorf("statistics: running tasks: %w", err)
	}
	type running struct{ tasks, jobs int }
	by := map[string]running{namespace.Default: {}}
	for job, items := range all {
		r := by[namespace.Of(job)]
		r.tasks += len(items)
		if len(items) > 0 {
			r.jobs++
		}
		by[namespace.Of(job)] = r
	}
	now := c.clk().Now()
	var errs []error
	for ns, r := range by {
		errs = append(errs, c.store.putOnce(ctx, taskRunningTable, "running_count", ns, minute, r.tasks, now),
			c.store.putOnce(ctx, jobRunningTable, "running_count", ns, minute, r.jobs, now))
	}
	return errors.Join(errs...)
}

// register writes today's registered-jobs row once a day.
func (c *Collector) register(ctx context.Context, now time.Time) error {
	day := c.floor(now, view.Day)
	if !c.registerDone.IsZero() && !day.After(c.registerDone) {
		return nil
	}
	keys, err := c.reg.JobKeys(ctx)
	if err != nil {
		return fmt.Errorf("statistics: registered jobs: %w", err)
	}
	nss, err := c.reg.Namespaces(ctx)
	if err != nil {
		return fmt.Errorf("statistics: namespaces: %w", err)
	}
	count := map[string]int{}
	for _, rec := range nss {
		count[rec.Name] = 0 // every namespace's day has a row: a count that fell to 0 is not carried
	}
	for _, k := range keys {
		count[namespace.Of(k)]++
	}
	for ns, n := range count {
		if err := c.store.putOnce(ctx, registerTable, "registered_count", ns, day, n, now); err != nil {
			return err
		}
	}
	c.registerDone = day
	return nil
}

// aggregate writes every complete hour from hourNext on, then every
// complete day from dayNext on. A zero hourNext or dayNext (a starting
// collector, or a failed read) is looked up in the tables first: the last
// aggregated hour or day is recomputed, in case the previous leader's last
// flush changed it, and nothing older than catchUpLimit is revisited.
func (c *Collector) aggregate(ctx context.Context, now time.Time) error {
	loc := c.store.loc
	for _, lv := range []struct {
		iv, from view.Interval
		next     *time.Time
	}{{view.Hour, view.Minute, &c.hourNext}, {view.Day, view.Hour, &c.dayNext}} {
		if lv.next.IsZero() {
			t, err := c.store.resumePoint(ctx, lv.iv, c.floor(now.Add(-catchUpLimit), lv.iv), now)
			if err != nil {
				return err
			}
			*lv.next = t
		}
		for t := *lv.next; !next(t, lv.iv, loc).After(now); t = next(t, lv.iv, loc) {
			if err := c.store.rollUp(ctx, lv.iv, lv.from, t, c.clk().Now()); err != nil {
				return err
			}
			*lv.next = next(t, lv.iv, loc)
		}
	}
	return nil
}
