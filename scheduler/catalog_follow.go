package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
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
			for ch := range ch {
				if err := c.standby(ctx, ch); err != nil && ctx.Err() == nil {
					log.Warn("catalog: apply a change to a standby's catalog", "change", ch, "err", err)
				}
			}
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
