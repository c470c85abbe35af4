package round

import (
	"container/heap"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/task"
)

// Capacity is what a namespace is promised (namespace.Record in the
// matcher's units) and the engine's own cap on it. A namespace the view
// does not list has none: no guarantee, no limit, weight 1.
type Capacity struct {
	// Guarantee is served before any namespace borrows; lent only to work
	// expected to end before the namespace's fires need it (lending.go).
	Guarantee offers.Resources
	// Limit is the most its running tasks may hold (nil: none).
	Limit *offers.Resources
	// Quota is the engine's cap (a Kubernetes ResourceQuota's hard
	// requests, less what other pods of the Kubernetes namespace use; nil:
	// none), honoured beside Limit; QuotaName names it.
	Quota     *offers.Resources
	QuotaName string
	// Closed, when not "", is why the engine launches none of the
	// namespace's work now (its Kubernetes namespace does not exist).
	Closed string
	// Weight is its share among borrowers (0: 1).
	Weight float64
	// PerCluster are its guarantee and limit on each cluster named (clusters.go): its
	// work on that cluster counts against them, and the rest of its work against
	// Guarantee; Limit holds over all of its work together.
	PerCluster map[string]ClusterCap
}

// ClusterCap is a namespace's guarantee and limit on one cluster.
type ClusterCap struct {
	Guarantee offers.Resources
	Limit     *offers.Resources // nil: none
}

// isZero reports whether c promises and caps nothing (a namespace the round need not
// tell from others).
func (c Capacity) isZero() bool {
	return c.Guarantee.IsZero() && c.Limit == nil && c.Quota == nil && c.QuotaName == "" && c.Closed == "" &&
		c.Weight == 0 && len(c.PerCluster) == 0
}

// Guaranteed reports whether c promises anything: a global guarantee, or one on some
// cluster (the namespaces whose cron fires the round keeps capacity for, View.Fires).
func (c Capacity) Guaranteed() bool {
	if !c.Guarantee.IsZero() {
		return true
	}
	for _, cc := range c.PerCluster {
		if !cc.Guarantee.IsZero() {
			return true
		}
	}
	return false
}

func (c Capacity) weight() float64 {
	if c.Weight <= 0 {
		return 1
	}
	return c.Weight
}

// ceiling is the tightest of Limit and Quota on each resource (ok false:
// neither is set), and whether the quota is the binding one.
func (c Capacity) ceiling() (ceil offers.Resources, ok, quota bool) {
	const huge = offers.Milli(1) << 60
	ceil = offers.Resources{CPU: huge, MemMB: int64(huge)}
	if c.Limit != nil {
		ceil, ok = *c.Limit, true
	}
	if q := c.Quota; q != nil {
		if q.CPU < ceil.CPU || q.MemMB < ceil.MemMB {
			quota = true
		}
		ceil, ok = offers.Resources{CPU: min(ceil.CPU, q.CPU), MemMB: min(ceil.MemMB, q.MemMB)}, true
	}
	return ceil, ok, quota
}

// Classes of a namespace's next entry: served within its guarantee, or
// borrowing idle capacity beyond it.
const (
	classGuaranteed = 0
	classBorrowing  = 1
)

// nsState is one namespace during a round: what its running tasks hold,
// its candidates in their order, and its place in the round's order. Its
// entries are taken in two passes: first those that fit within what is
// left of its guarantee (skipping the others, which go to later), then
// the rest, in their order, as a borrower.
type nsState struct {
	name string
	cap  Capacity
	used offers.Resources // its running and retiring tasks' shards and its apps' executors, plus this round's launches
	// usedOn is used by cluster, kept only when it has a per-cluster capacity.
	usedOn  map[string]offers.Resources
	queue   []int32 // its candidates (indices into decider.cands), oldest first
	head    int
	later   []int32 // entries beyond its guarantee, for the borrowing pass
	lhead   int
	atLimit *cand   // the entry that found it at its limit this round: the rest wait behind it
	idx     int     // in the round's heap
	class   int     // of its next entry
	share   float64 // weighted dominant share of what it borrows
	headC   *cand   // the next entry
	// atLimitOn is, by cluster, the entry that waits for room under its limit there this
	// round: its later entries are not placed there (clusters.go).
	atLimitOn map[string]*cand
	// retiring is the part of used its retiring tasks hold (View.Retiring), and
	// retiringOn the part of usedOn; twice and twiceOn are the parts of those whose
	// replacement is launched: held twice for the shard until the replacement runs.
	retiring, twice     offers.Resources
	retiringOn, twiceOn map[string]offers.Resources
}

// done reports whether every entry of the namespace was handed out.
func (ns *nsState) done() bool { return ns.head >= len(ns.queue) && ns.lhead >= len(ns.later) }

// within reports whether r fits within the namespace's guarantee.
func (ns *nsState) within(r offers.Resources) bool {
	g := ns.cap.Guarantee
	return r.CPU <= g.CPU && r.MemMB <= g.MemMB
}

// covered is the part of its usage its per-cluster guarantees cover: on each cluster
// with one, what it holds there up to it.
func (ns *nsState) covered() offers.Resources {
	var r offers.Resources
	for name, cc := range ns.cap.PerCluster {
		u := ns.usedOn[name]
		r = r.Add(offers.Resources{CPU: min(u.CPU, cc.Guarantee.CPU), MemMB: min(u.MemMB, cc.Guarantee.MemMB)})
	}
	return r
}

// rest is its usage its per-cluster guarantees do not cover: what counts against its
// global guarantee (all of it with none per cluster).
func (ns *nsState) rest() offers.Resources {
	if len(ns.cap.PerCluster) == 0 {
		return ns.used
	}
	return ns.used.Sub(ns.covered())
}

// guaranteedUse is what it holds within its guarantees, global and per cluster.
func (ns *nsState) guaranteedUse() offers.Resources {
	g, r := ns.cap.Guarantee, ns.rest()
	return ns.used.Sub(r).Add(offers.Resources{CPU: min(r.CPU, g.CPU), MemMB: min(r.MemMB, g.MemMB)})
}

// borrowed is what it holds beyond its guarantees.
func (ns *nsState) borrowed() offers.Resources {
	g, r := ns.cap.Guarantee, ns.rest()
	return offers.Resources{CPU: max(r.CPU-g.CPU, 0), MemMB: max(r.MemMB-g.MemMB, 0)}
}

// allGuarantees is its global guarantee and every per-cluster one together: what it
// holds at most within them.
func (ns *nsState) allGuarantees() offers.Resources {
	g := ns.cap.Guarantee
	for _, cc := range ns.cap.PerCluster {
		g = g.Add(cc.Guarantee)
	}
	return g
}

// anyGuarantee reports whether it has a guarantee, global or on some cluster.
func (ns *nsState) anyGuarantee() bool { return !ns.allGuarantees().IsZero() }

// shards is what an entry's shards hold while they run.
func (c *cand) shards() offers.Resources {
	return offers.Resources{CPU: c.sh.task.CPU * offers.Milli(c.sh.n), MemMB: c.sh.task.MemMB * int64(c.sh.n)}
}

// execOwner is the namespace an app's executor is charged to: its app's
// (docs/tenancy.md). That holds for the executor of a namespace's HTTP
// jobs that name no app (jobs.HTTPApp) too: it runs that namespace's work
// alone, and on Kubernetes its share is in each of the namespace's pods,
// which its ResourceQuota counts (a round that left it out let pods past
// the quota's room).
func execOwner(appName string) (string, bool) {
	if appName == "" {
		return "", false
	}
	return namespace.Of(appName), true
}

// charged reports whether c's app's executor counts against c's
// namespace.
func (c *cand) charged() bool {
	owner, ok := execOwner(c.sh.app)
	return ok && owner == c.ns.name && !c.sh.exec.IsZero()
}

// withExecs is c's shards and k of its app's executors.
func (c *cand) withExecs(k int) offers.Resources {
	s, e := c.shards(), c.sh.exec
	return offers.Resources{CPU: s.CPU + e.CPU*offers.Milli(k), MemMB: s.MemMB + e.MemMB*int64(k)}
}

// execsAtMost is how many of its app's executors c may start: the
// placement decides on which agents its shards land, so it is counted
// conservatively, once per shard on at most as many agents (with offers)
// as do not run the executor yet (none where it runs on all of them).
func (s *spaces) execsAtMost(c *cand) int {
	if c.sh.exec.IsZero() || s.m == nil {
		return 0
	}
	return min(c.sh.n, s.m.Absent(c.sh.app))
}

// cost is what an entry adds to its namespace's usage when it launches,
// as a namespace's guarantee and limit count it: its shards, and its
// app's executor on each agent where it would start one (execsAtMost).
func (s *spaces) cost(c *cand) offers.Resources {
	if !c.charged() {
		return c.shards()
	}
	return c.withExecs(s.execsAtMost(c))
}

// footprint is what an entry takes of the cluster when it launches, at
// most: its shards and the executors it may start, whichever namespace
// they count against.
func (s *spaces) footprint(c *cand) offers.Resources { return c.withExecs(s.execsAtMost(c)) }

// leastCost is the least an entry holds of its namespace while it runs:
// its shards and, once, its app's executor (which runs before any shard,
// counted against the namespace already or started by this entry). An
// entry whose leastCost is above its namespace's ceiling never runs.
func (c *cand) leastCost() offers.Resources {
	if !c.charged() {
		return c.shards()
	}
	return c.withExecs(1)
}

// spaces are the namespaces during a round: each one's usage and entries
// (nsState), the order they are served in (order.go), and the rules that
// gate their entries (limits.go), lend their guarantees (lending.go) and
// take borrowed capacity back (preempt.go).
type spaces struct {
	v      *View
	cands  []cand // the round's candidates (decider.cands), which nsState.queue indexes
	occ    *occupancy
	m      *offers.Matcher // the round's: how many executors an entry may start
	byName map[string]*nsState
	multi  bool // namespaces are in play: more than one, or one with a capacity
	order  nsOrder
	total  offers.Resources // the empty cluster
	execUp map[string]bool  // the apps with an executor running somewhere
	lend   lender
	// guaranteed are the entries within their namespace's guarantee that
	// wait for resources, in the round's order (preempt.go).
	guaranteed []*cand
	// policyOf is where an entry may be placed now (policy.use nil: no cluster in the
	// view), for the per-cluster guarantees and preemption (clusters.go).
	policyOf func(c *cand) policy
}

// setup sets up the namespaces of a round: every namespace with
// candidates, running tasks or a capacity, its usage, and the order.
func (s *spaces) setup(v *View, cands []cand, cluster emptyCluster, m *offers.Matcher, occ *occupancy) {
	s.v, s.cands, s.m, s.occ = v, cands, m, occ
	s.lend = lender{v: v, s: s}
	s.byName = map[string]*nsState{}
	for name, c := range s.v.Namespaces {
		s.space(name).cap = c
	}
	for _, ns := range s.byName {
		if len(ns.cap.PerCluster) > 0 && len(v.Clusters) > 0 {
			ns.usedOn = map[string]offers.Resources{}
			for _, cc := range ns.cap.PerCluster {
				s.lend.byCluster = s.lend.byCluster || !cc.Guarantee.IsZero()
			}
		}
	}
	for job, shards := range s.v.Running {
		s.hold(job, shards, false)
	}
	for job, shards := range s.v.Retiring {
		s.hold(job, retiringTasks(shards), true)
	}
	// Each executor counts against its app's namespace, once per agent,
	// an idle one too: it holds its share until it exits.
	s.execUp = map[string]bool{}
	for agent, list := range s.occ.executorsByAgent() {
		for _, e := range list {
			s.execUp[e.app] = true
			if owner, ok := execOwner(e.app); ok {
				ns := s.space(owner)
				ns.used = ns.used.Add(e.res)
				if ns.usedOn != nil {
					cl := s.v.clusterOfAgent(agent)
					ns.usedOn[cl] = ns.usedOn[cl].Add(e.res)
				}
			}
		}
	}
	for i := range s.cands {
		ns := s.space(namespace.Of(s.cands[i].job))
		s.cands[i].ns = ns
		ns.queue = append(ns.queue, int32(i))
	}
	for _, a := range cluster {
		s.total = s.total.Add(a.Total)
	}
	s.multi = len(s.byName) > 1
	for _, ns := range s.byName {
		s.multi = s.multi || !ns.cap.isZero()
	}
	s.order = s.order[:0]
	for _, ns := range s.byName {
		ns.idx = -1
		if s.rekey(ns) {
			ns.idx = len(s.order)
			s.order = append(s.order, ns)
		}
	}
	heap.Init(&s.order)
}

// hold adds what a job's running (or retiring) tasks hold to its namespace's usage, by
// cluster too when it has per-cluster capacities. Of retiring tasks it notes the part
// held twice: those whose replacement is launched (a running entry of the shard), which
// end as soon as it runs; one whose replacement is not launched yet stands for its shard.
func (s *spaces) hold(job string, tasks map[int]task.Entry, retiring bool) {
	cfg, _, _ := s.v.Jobs.Lookup(job)
	ns := s.space(namespace.Of(job))
	res := offers.Resources{CPU: offers.CPUs(cfg.CPUCount), MemMB: offers.MemMB(cfg.MemoryMB)}
	for item, e := range tasks {
		ns.used = ns.used.Add(res)
		cl := ""
		if ns.usedOn != nil {
			cl = s.v.clusterOfAgent(e.AgentID)
			ns.usedOn[cl] = ns.usedOn[cl].Add(res)
		}
		if !retiring {
			continue
		}
		ns.retiring = ns.retiring.Add(res)
		if ns.usedOn != nil {
			ns.retiringOn = addOn(ns.retiringOn, cl, res)
		}
		if _, replaced := s.v.Running[job][item]; replaced {
			ns.twice = ns.twice.Add(res)
			if ns.usedOn != nil {
				ns.twiceOn = addOn(ns.twiceOn, cl, res)
			}
		}
	}
}

// addOn adds r to m[cl], making m if needed.
func addOn(m map[string]offers.Resources, cl string, r offers.Resources) map[string]offers.Resources {
	if m == nil {
		m = map[string]offers.Resources{}
	}
	m[cl] = m[cl].Add(r)
	return m
}

// space is the namespace's state, made on first use.
func (s *spaces) space(name string) *nsState {
	ns := s.byName[name]
	if ns == nil {
		ns = &nsState{name: name}
		s.byName[name] = ns
	}
	return ns
}

// placedIn notes a launch of c that started k of its app's executors: its
// namespace holds more, which moves the namespace in the order.
func (s *spaces) placedIn(c *cand, k int) {
	ns := c.ns
	if c.charged() {
		ns.used = ns.used.Add(c.withExecs(k))
	} else {
		ns.used = ns.used.Add(c.shards())
	}
	if ns.usedOn != nil {
		for cl, r := range s.m.LastByCluster(c.charged()) {
			ns.usedOn[cl] = ns.usedOn[cl].Add(r)
		}
	}
	var on map[string]offers.Resources
	if s.lend.byCluster {
		on = s.m.LastByCluster(true)
	}
	s.lend.launched(c.withExecs(k), on, c.class == classGuaranteed)
	s.refresh(ns)
}
