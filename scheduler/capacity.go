package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// CapacityRefresh is how often the launcher reads the namespaces'
// records again: a guarantee, limit or weight set with
// PUT /api/namespaces/{name} (on any instance) binds within it.
const CapacityRefresh = 5 * time.Second

// capacities keeps the namespaces' capacities for the launch rounds,
// read from the registry at most every CapacityRefresh. A failed read
// keeps the last one (logged): the rounds go on with what was known.
type capacities struct {
	reg   *registry.Registry
	clock clock.Clock
	log   *slog.Logger
	at    time.Time
	m     map[string]round.Capacity
}

// get returns every namespace with a capacity set (nil when none has).
func (c *capacities) get(ctx context.Context) map[string]round.Capacity {
	now := c.clock.Now()
	if !c.at.IsZero() && now.Sub(c.at) < CapacityRefresh && !now.Before(c.at) {
		return c.m
	}
	recs, err := c.reg.Namespaces(ctx)
	if err != nil {
		c.log.Warn("launcher: read the namespaces' capacities; the last ones read stay in force", "err", err)
		return c.m
	}
	c.at = now
	c.m = nil
	for _, rec := range recs {
		cp, ok := Capacity(rec)
		if !ok {
			continue
		}
		if c.m == nil {
			c.m = map[string]round.Capacity{}
		}
		c.m[rec.Name] = cp
	}
	return c.m
}

// Capacity is a namespace's record in the round's units; false when it
// sets nothing (no guarantee, no limit, weight 1: a namespace the round
// need not list).
func Capacity(rec namespace.Record) (round.Capacity, bool) {
	res := func(r *namespace.Resources) offers.Resources {
		return offers.Resources{CPU: offers.CPUs(r.CPUCount), MemMB: offers.MemMB(r.MemoryMB)}
	}
	var c round.Capacity
	if rec.Guarantee != nil {
		c.Guarantee = res(rec.Guarantee)
	}
	if rec.Limit != nil {
		l := res(rec.Limit)
		c.Limit = &l
	}
	c.Weight = rec.EffectiveWeight()
	return c, !c.Guarantee.IsZero() || c.Limit != nil || c.Weight != 1
}

// fires lists the next cron fire of every job of the namespaces with a
// guarantee within the round's horizon, with what each will need (its
// shards, and its app's executor), soonest first: what the guarantees
// are kept for.
func (l *launcher) fires(now time.Time, caps map[string]round.Capacity) []round.Fire {
	guaranteed := map[string]bool{}
	for ns, c := range caps {
		if !c.Guarantee.IsZero() {
			guaranteed[ns] = true
		}
	}
	if len(guaranteed) == 0 || l.nextFires == nil {
		return nil
	}
	fs := l.nextFires(now.Add(round.DefaultHorizon), func(job string) bool { return guaranteed[namespace.Of(job)] })
	out := fs[:0]
	for _, f := range fs {
		j, a, why := l.catalog.Lookup(f.Job)
		if why != jobs.Runnable {
			continue
		}
		n := int64(max(j.ShardingTotalCount, 1))
		f.Need = offers.Resources{CPU: offers.CPUs(j.CPUCount)*offers.Milli(n) + offers.CPUs(a.CPUCount),
			MemMB: offers.MemMB(j.MemoryMB)*n + offers.MemMB(a.MemoryMB)}
		out = append(out, f)
	}
	return out
}
