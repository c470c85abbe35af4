package scheduler

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/registry"
)

// followRetry is the pause before Follow watches again after its watch
// closed or could not be set.
const followRetry = time.Second

// Follow keeps the catalog current while no term of this instance holds
// it (a standby's, or a leader's between terms): it watches the
// registry's configuration, syncs once the watch is set, then applies each
// change, until ctx ends. A term's scheduler takes the catalog over for
// its term (Deps.Catalog): Follow's changes are then ignored, the term's
// loop applies them together with what they do to running tasks, and
// when the term ends Follow syncs and goes on. A watch that closes is set
// again after followRetry (and synced again).
func (c *Catalog) Follow(ctx context.Context, clk clock.Clock, log *slog.Logger) error {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		ch, err := c.reg.WatchConfig(ctx)
		if err == nil {
			if err := c.standby(ctx, registry.ConfigChange{Kind: registry.ConfigAll}); err != nil && ctx.Err() == nil {
				log.Warn("catalog: sync a standby's catalog", "err", err)
			}
			c.followChanges(ctx, clk, ch, log)
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("catalog: the configuration watch closed; watching again", "err", err, "in", followRetry)
		t := clk.NewTimer(followRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// queuesEvery is how often a catalog not held by a term decodes the
// registry's ready and failover queues into its memo (Catalog.QueueMemo).
const queuesEvery = time.Second

// followChanges applies the watch's changes until it closes, and keeps the
// queue memo warm every queuesEvery.
func (c *Catalog) followChanges(ctx context.Context, clk clock.Clock, ch <-chan registry.ConfigChange, log *slog.Logger) {
	t := clk.NewTimer(queuesEvery)
	defer t.Stop()
	for {
		select {
		case change, ok := <-ch:
			if !ok {
				return
			}
			if err := c.standby(ctx, change); err != nil && ctx.Err() == nil {
				log.Warn("catalog: apply a change to a standby's catalog", "change", change, "err", err)
			}
		case <-t.C():
			if err := c.warmQueues(ctx); err != nil && ctx.Err() == nil {
				log.Debug("catalog: read the queues on a standby", "err", err)
			}
			t.Reset(queuesEvery)
		}
	}
}

// warmQueues reads the ready and failover queues into the memo unless a
// term holds it: the term's first launch round then decodes only the
// entries changed since (at 50,000 ready entries the whole decode was
// most of that round's 1.2 s).
func (c *Catalog) warmQueues(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.taken {
		return nil
	}
	if _, err := c.reg.Work().ReadyQueueMemo(ctx, &c.queueMemo); err != nil {
		return err
	}
	_, err := c.reg.Work().FailoverQueueMemo(ctx, &c.queueMemo)
	return err
}

// QueueMemo is the memo of the decoded ready and failover queues that
// Follow keeps warm between terms, for the term that takes the catalog
// (only its loop uses it then; registry.QueueMemo is not safe for
// concurrent use).
func (c *Catalog) QueueMemo() *registry.QueueMemo { return &c.queueMemo }

// standby applies a change unless a term holds the catalog. Taking the
// writers' lock first means take waits for a change being applied, and no
// change is applied after take returned.
func (c *Catalog) standby(ctx context.Context, ch registry.ConfigChange) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.taken {
		return nil
	}
	return c.applyLocked(ctx, ch)
}

// take hands the catalog to a term: Follow applies nothing from here on
// (a change it is applying finishes first), until release.
func (c *Catalog) take() {
	c.wmu.Lock()
	c.taken = true
	c.wmu.Unlock()
}

// release hands the catalog back to Follow after a term and syncs it, so
// a change the term's watch did not see before it ended (and Follow
// ignored meanwhile) is not missed.
func (c *Catalog) release(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.taken = false
	return c.syncLocked(ctx)
}

// lastSynced is how many entries the last Sync decoded.
func (c *Catalog) lastSynced() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.synced
}

// maxSchedules bounds the parsed crons a catalog keeps (distinct
// expressions; a catalog past it starts its memo anew).
const maxSchedules = 1 << 16

// Plan returns j's schedule as it fires (jobs.Config.Plan: its crons,
// jitter offset and cal, the calendar it names), nil without a cron. Each
// cron is parsed once per expression for the instance's life (per job
// when it has an "H" field): a term's producer computes every job's next
// fire at its start (and a catch-up counts the missed ones), and parsing
// 100,000 crons there twice was CPU on the term's first second.
// Schedules are immutable, shared by the jobs with one expression.
func (c *Catalog) Plan(j jobs.Config, cal cron.Excluder, inherited time.Duration) (*cron.Plan, error) {
	return j.PlanWith(c.parse, cal, inherited)
}

// Parse is cron.ParseFor through the catalog's memo (Plan).
func (c *Catalog) Parse(expr, key string) (*cron.Schedule, error) { return c.parse(expr, key) }

func (c *Catalog) parse(expr, key string) (*cron.Schedule, error) {
	memo := expr
	if strings.ContainsAny(expr, "Hh") {
		memo = expr + "\x00" + key
	}
	c.smu.Lock()
	s, ok := c.schedules[memo]
	c.smu.Unlock()
	if ok {
		return s, nil
	}
	s, err := cron.ParseFor(expr, key)
	if err != nil {
		return nil, err
	}
	c.smu.Lock()
	if c.schedules == nil || len(c.schedules) >= maxSchedules {
		c.schedules = map[string]*cron.Schedule{}
	}
	c.schedules[memo] = s
	c.smu.Unlock()
	return s, nil
}
