package scheduler

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// CapacityRefresh is how often the launcher reads the namespaces'
// records again. A record written through the API binds at the next
// round (CapacityChanged); one written otherwise within CapacityRefresh.
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
	names []string // every namespace, as last read
	// placed are the clusters of the namespaces that name some (docs/clusters.md).
	placed map[string][]string
	// engine, when set, caps namespaces too (Kubernetes: missing namespaces, ResourceQuotas);
	// asked every round.
	engine engine.NamespaceCaps
	over   bool // the guarantees were above the cluster when last looked at
	stale  atomic.Bool
}

// CapacityChanged tells the launch rounds that a namespace's record
// changed: the next round reads the capacities again (the API calls it on
// the leader, which serves every write). Safe from any goroutine.
func (s *Scheduler) CapacityChanged() {
	s.launcher.caps.stale.Store(true)
	s.Wake()
}

// checkCluster warns, each time it becomes so, that the namespaces'
// guarantees add up to more than the cluster: some cannot be kept (the
// waits within them say cluster_smaller_than_guarantees).
func (c *capacities) checkCluster(caps map[string]round.Capacity, agents []round.Agent) {
	var sum, total offers.Resources
	for _, cp := range caps {
		sum = sum.Add(cp.Guarantee)
	}
	for _, a := range agents {
		total = total.Add(a.Total)
	}
	over := len(agents) > 0 && !sum.Fits(total)
	if over && !c.over {
		c.log.Warn("the namespaces' guarantees add up to more than the cluster: not every guarantee can be kept",
			"guarantees", sum.String(), "cluster", total.String())
	}
	c.over = over
}

// get returns every namespace with a capacity set (nil when none has),
// with the engine's caps.
func (c *capacities) get(ctx context.Context) map[string]round.Capacity {
	m := c.records(ctx)
	if c.engine == nil {
		return m
	}
	return withEngineCaps(m, c.engine.NamespaceCaps(c.names))
}

// withEngineCaps adds the engine's caps to the records' capacities (a
// copy: m is kept between rounds).
func withEngineCaps(m map[string]round.Capacity, caps map[string]engine.NamespaceCap) map[string]round.Capacity {
	if len(caps) == 0 {
		return m
	}
	out := make(map[string]round.Capacity, len(m)+len(caps))
	for k, v := range m {
		out[k] = v
	}
	for ns, ec := range caps {
		cp := out[ns]
		cp.Closed = ec.Closed
		if ec.Capped {
			q := offers.Resources{CPU: offers.CPUs(max(ec.CPUs, 0)), MemMB: offers.MemMB(max(ec.MemMB, 0))}
			cp.Quota, cp.QuotaName = &q, ec.Name
		}
		out[ns] = cp
	}
	return out
}

// records returns the namespaces' records' capacities, read again at
// most every CapacityRefresh.
func (c *capacities) records(ctx context.Context) map[string]round.Capacity {
	now := c.clock.Now()
	if !c.stale.Swap(false) && !c.at.IsZero() && now.Sub(c.at) < CapacityRefresh && !now.Before(c.at) {
		return c.m
	}
	recs, err := c.reg.Tenancy().Namespaces(ctx)
	if err != nil {
		c.log.Warn("launcher: read the namespaces' capacities; the last ones read stay in force", "err", err)
		return c.m
	}
	c.at = now
	c.m, c.names, c.placed = nil, c.names[:0], nil
	for _, rec := range recs {
		c.names = append(c.names, rec.Name)
		if len(rec.Clusters) > 0 {
			if c.placed == nil {
				c.placed = map[string][]string{}
			}
			c.placed[rec.Name] = rec.Clusters
		}
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
	for name, cc := range rec.PerCluster {
		var rc round.ClusterCap
		if cc.Guarantee != nil {
			rc.Guarantee = res(cc.Guarantee)
		}
		if cc.Limit != nil {
			l := res(cc.Limit)
			rc.Limit = &l
		}
		if c.PerCluster == nil {
			c.PerCluster = map[string]round.ClusterCap{}
		}
		c.PerCluster[name] = rc
	}
	return c, !c.Guarantee.IsZero() || c.Limit != nil || c.Weight != 1 || len(c.PerCluster) > 0
}

// fires lists the next cron fire of every job of the namespaces with a
// guarantee (global or on some cluster) within the round's horizon, with
// what each will need (its shards, and its app's executor), soonest
// first: what the guarantees are kept for. A fire the producer staged ahead of its instant (a ready
// entry held until then, round.StagedUntil: its NotBefore, or the instant
// its next execution serves when it joined executions pending) is its
// job's next fire:
// the producer's own next fire of that job comes after it, and a job
// counts once. Without it, capacity was lent in the second before a
// staged fire as though none were coming, and the fire waited behind a
// borrower started in that second.
func (l *launcher) fires(now time.Time, caps map[string]round.Capacity, ready []*queue.Ready) []round.Fire {
	guaranteed := map[string]bool{}
	for ns, c := range caps {
		if c.Guaranteed() {
			guaranteed[ns] = true
		}
	}
	if len(guaranteed) == 0 || l.nextFires == nil {
		return nil
	}
	staged := map[string]time.Time{}
	for _, rd := range ready {
		if until := round.StagedUntil(rd); until.After(now) && guaranteed[namespace.Of(rd.Job)] {
			staged[rd.Job] = until
		}
	}
	fs := l.nextFires(now.Add(round.DefaultHorizon), func(job string) bool {
		_, st := staged[job]
		return !st && guaranteed[namespace.Of(job)]
	})
	for job, at := range staged {
		fs = append(fs, round.Fire{Job: job, At: at})
	}
	slices.SortFunc(fs, func(a, b round.Fire) int { return cmp.Or(a.At.Compare(b.At), strings.Compare(a.Job, b.Job)) })
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

// preempt stops the running executions the plan takes borrowed capacity
// back from (round.Plan.Preempt): each one's tasks are marked killed by
// a preemption (so no other is preempted while they run, and their end
// says why) and killed gracefully (the engine's kill: SIGTERM, then the
// grace period); the run is queued again at once, as a misfire serving
// the cron instant the run served, or as the trigger's run it was (its
// parameter and idempotency key); it launches when its tasks have ended
// and capacity frees up. A killed task is never a failure (it counts
// toward no retry and no pause).
func (l *launcher) preempt(ctx context.Context, ps []round.Preemption) {
	for _, p := range ps {
		// Its end is read by the preempted namespace's users: it names neither the namespace
		// nor the work it made room for (the log below does, for the operator).
		by := round.PreemptionBy + " for " + round.OtherWork + " within its namespace's guarantee"
		out, err := l.killRun(ctx, p.Job, by)
		if err != nil {
			l.log.Warn("preempt: stop the run", "job", p.Job, "err", err)
			continue
		}
		again := queue.Trigger{Misfire: true, At: l.clock.Now(), By: round.PreemptionBy, Nominal: out.Nominal, Run: out.Run}
		if _, err := l.reg.Work().TriggerAgain(ctx, p.Job, again); err != nil {
			l.log.Warn("preempt: queue the run again", "job", p.Job, "err", err)
		}
		l.queues.changed()
		l.log.Info("preempted borrowed capacity", "job", p.Job, "namespace", p.Namespace, "for", p.For,
			"forNamespace", p.ForNamespace, "tasks", len(out.Tasks))
	}
}
