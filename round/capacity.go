package round

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
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
	name    string
	cap     Capacity
	used    offers.Resources // its running tasks' shards and its apps' executors, plus this round's launches
	queue   []int32          // its candidates (indices into decider.cands), oldest first
	head    int
	later   []int32 // entries beyond its guarantee, for the borrowing pass
	lhead   int
	atLimit *cand   // the entry that found it at its limit this round: the rest wait behind it
	idx     int     // in the round's heap
	class   int     // of its next entry
	share   float64 // weighted dominant share of what it borrows
	headC   *cand   // the next entry
}

// done reports whether every entry of the namespace was handed out.
func (ns *nsState) done() bool { return ns.head >= len(ns.queue) && ns.lhead >= len(ns.later) }

// within reports whether r fits within the namespace's guarantee.
func (ns *nsState) within(r offers.Resources) bool {
	g := ns.cap.Guarantee
	return r.CPU <= g.CPU && r.MemMB <= g.MemMB
}

// borrowed is what it holds beyond its guarantee.
func (ns *nsState) borrowed() offers.Resources {
	g := ns.cap.Guarantee
	return offers.Resources{CPU: max(ns.used.CPU-g.CPU, 0), MemMB: max(ns.used.MemMB-g.MemMB, 0)}
}

// shards is what an entry's shards hold while they run.
func (c *cand) shards() offers.Resources {
	return offers.Resources{CPU: c.sh.task.CPU * offers.Milli(c.sh.n), MemMB: c.sh.task.MemMB * int64(c.sh.n)}
}

// execOwner is the namespace an app's executor is charged to: its app's
// (docs/tenancy.md). The executor of HTTP jobs that name no app
// (app.HTTPOnlyName) serves every namespace's and counts against none,
// as the API's usage shows it (no namespace holds that app).
func execOwner(appName string) (string, bool) {
	if appName == "" || appName == app.HTTPOnlyName {
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
func (d *decider) execsAtMost(c *cand) int {
	if c.sh.exec.IsZero() || d.m == nil {
		return 0
	}
	return min(c.sh.n, d.m.Absent(c.sh.app))
}

// cost is what an entry adds to its namespace's usage when it launches,
// as a namespace's guarantee and limit count it: its shards, and its
// app's executor on each agent where it would start one (execsAtMost).
func (d *decider) cost(c *cand) offers.Resources {
	if !c.charged() {
		return c.shards()
	}
	return c.withExecs(d.execsAtMost(c))
}

// footprint is what an entry takes of the cluster when it launches, at
// most: its shards and the executors it may start, whichever namespace
// they count against.
func (d *decider) footprint(c *cand) offers.Resources { return c.withExecs(d.execsAtMost(c)) }

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

// execRun is an app's executor running on an agent, with what it holds.
type execRun struct {
	app string
	res offers.Resources
}

// executorsByAgent indexes the executors known to run (once per round):
// the view's (View.Executors, idle ones too) and, once per app and agent,
// those of the running tasks, sorted by app.
func (d *decider) executorsByAgent() map[string][]execRun {
	if d.execs != nil {
		return d.execs
	}
	seen := map[offers.ExecutorKey]bool{}
	d.execs = map[string][]execRun{}
	add := func(k offers.ExecutorKey, a app.Config) {
		if seen[k] || k.AgentID == "" {
			return
		}
		seen[k] = true
		d.execs[k.AgentID] = append(d.execs[k.AgentID], execRun{app: k.App, res: offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}})
	}
	for job, shards := range d.v.Running {
		_, a, _ := d.v.Jobs.Lookup(job)
		if a.AppName == "" {
			continue // unknown: nothing to charge
		}
		for _, e := range shards {
			add(offers.ExecutorKey{App: a.AppName, AgentID: e.AgentID}, a)
		}
	}
	for k, up := range d.v.Executors {
		if !up || seen[k] {
			continue
		}
		a, ok := d.v.Jobs.App(k.App)
		if k.App == app.HTTPOnlyName {
			a, ok = app.HTTPOnly(), true
		}
		if ok {
			add(k, a)
		}
	}
	for _, list := range d.execs {
		slices.SortFunc(list, func(x, y execRun) int { return strings.Compare(x.app, y.app) })
	}
	return d.execs
}

// capacityState sets up the namespaces of a round: every namespace with
// candidates, running tasks or a capacity, its usage, and the order.
func (d *decider) capacityState() {
	d.spaces = map[string]*nsState{}
	for name, c := range d.v.Namespaces {
		d.space(name).cap = c
	}
	for job, shards := range d.v.Running {
		cfg, _, _ := d.v.Jobs.Lookup(job)
		n := int64(len(shards))
		ns := d.space(namespace.Of(job))
		ns.used = ns.used.Add(offers.Resources{CPU: offers.CPUs(cfg.CPUCount) * offers.Milli(n), MemMB: offers.MemMB(cfg.MemoryMB) * n})
	}
	// Each executor counts against its app's namespace, once per agent,
	// an idle one too: it holds its share until it exits.
	d.execUp = map[string]bool{}
	for _, list := range d.executorsByAgent() {
		for _, e := range list {
			d.execUp[e.app] = true
			if owner, ok := execOwner(e.app); ok {
				ns := d.space(owner)
				ns.used = ns.used.Add(e.res)
			}
		}
	}
	for i := range d.cands {
		ns := d.space(namespace.Of(d.cands[i].job))
		d.cands[i].ns = ns
		ns.queue = append(ns.queue, int32(i))
	}
	for _, a := range d.cluster {
		d.total = d.total.Add(a.Total)
	}
	d.multi = len(d.spaces) > 1
	for _, ns := range d.spaces {
		d.multi = d.multi || ns.cap != (Capacity{})
	}
	d.order = d.order[:0]
	for _, ns := range d.spaces {
		ns.idx = -1
		if d.rekey(ns) {
			ns.idx = len(d.order)
			d.order = append(d.order, ns)
		}
	}
	heap.Init(&d.order)
}

func (d *decider) space(name string) *nsState {
	ns := d.spaces[name]
	if ns == nil {
		ns = &nsState{name: name}
		d.spaces[name] = ns
	}
	return ns
}

// rekey finds a namespace's next entry and sets its place in the order:
// in the first pass the next entry that fits what is left of its
// guarantee (those that do not are kept for the second); then the next
// of the rest. It reports false when none is left.
func (d *decider) rekey(ns *nsState) bool {
	if ns.cap.Guarantee.IsZero() && ns.lhead == 0 && len(ns.later) == 0 && ns.head == 0 {
		ns.later, ns.queue = ns.queue, nil // nothing is within a zero guarantee
	}
	for ns.head < len(ns.queue) {
		c := &d.cands[ns.queue[ns.head]]
		if ns.within(ns.used.Add(d.cost(c))) {
			ns.headC, ns.class = c, classGuaranteed
			return true
		}
		ns.later = append(ns.later, ns.queue[ns.head])
		ns.head++
	}
	if ns.lhead >= len(ns.later) {
		return false
	}
	ns.headC, ns.class = &d.cands[ns.later[ns.lhead]], classBorrowing
	ns.share = dominantShare(ns.borrowed(), d.total) / ns.cap.weight()
	return true
}

// dominantShare is the larger of r's shares of the cluster's CPU and
// memory (DRF's dominant share); with no cluster known, the CPUs
// themselves.
func dominantShare(r, total offers.Resources) float64 {
	var s float64
	if total.CPU > 0 {
		s = float64(r.CPU) / float64(total.CPU)
	} else {
		s = float64(r.CPU)
	}
	if total.MemMB > 0 {
		s = max(s, float64(r.MemMB)/float64(total.MemMB))
	}
	return s
}

// next returns the round's next entry: entries within their namespace's
// guarantee first (oldest first), then those that borrow, the namespace
// with the smallest weighted dominant share first; inside a namespace its
// own order (failover shards, then executions, oldest first).
func (d *decider) next() *cand {
	if len(d.order) == 0 {
		return nil
	}
	ns := d.order[0]
	c := ns.headC
	c.class = ns.class
	if ns.class == classGuaranteed {
		ns.head++
	} else {
		ns.lhead++
	}
	d.refresh(ns)
	return c
}

// refresh moves a namespace in the order after its next entry or its
// usage changed.
func (d *decider) refresh(ns *nsState) {
	if ns.idx < 0 {
		return // handed out already
	}
	if !d.rekey(ns) {
		heap.Remove(&d.order, ns.idx)
		ns.idx = -1
		return
	}
	heap.Fix(&d.order, ns.idx)
}

// placedIn notes a launch of c that started k of its app's executors: its
// namespace holds more, which moves the namespace in the order.
func (d *decider) placedIn(c *cand, k int) {
	ns := c.ns
	if c.charged() {
		ns.used = ns.used.Add(c.withExecs(k))
	} else {
		ns.used = ns.used.Add(c.shards())
	}
	d.placedCost = d.placedCost.Add(c.withExecs(k))
	if c.class == classGuaranteed {
		d.protDirty = true
	}
	d.refresh(ns)
}

// freeNow is what the cluster has free by the running tasks' count (the
// apps' executors counted, idle ones too), less this round's launches.
func (d *decider) freeNow() offers.Resources {
	if !d.freeKnown {
		d.freeKnown = true
		offs := d.offs
		if !d.estimated {
			offs = d.freeByCount()
		}
		for _, o := range offs {
			d.free = d.free.Add(o.Free)
		}
	}
	return d.free.Sub(d.placedCost)
}

// rest hands out the entries the order has not reached, in no particular
// order (the round stopped at its bound).
func (d *decider) rest(f func(c *cand)) {
	order := d.order
	d.order = nil
	for _, ns := range order {
		ns.idx = -1
		for _, list := range [][]int32{ns.queue[min(ns.head, len(ns.queue)):], ns.later[ns.lhead:]} {
			for _, i := range list {
				f(&d.cands[i])
			}
		}
		ns.head, ns.lhead = len(ns.queue), len(ns.later)
	}
}

// gate applies the namespace's rules to c before it is matched: an entry
// larger than its namespace's ceiling never runs; one that would take its
// namespace over its limit (or quota) waits, and so does everything of
// the namespace after it this round; one that borrows must leave what
// other namespaces' fires need of their guarantees (lending.go).
func (d *decider) gate(c *cand) (Wait, bool) {
	ns := c.ns
	cost, least := d.cost(c), c.leastCost()
	ceil, capped, quota := ns.cap.ceiling()
	if ns.cap.Closed != "" {
		return Wait{Reason: WaitNSLimit, NamespaceRule: &NamespaceRule{Namespace: ns.name, Rule: RuleEngineClosed},
			Message: fmt.Sprintf("namespace %s cannot launch on this cluster now: %s", ns.name, ns.cap.Closed)}, false
	}
	if capped && quota && !least.Fits(ceil) && (ns.cap.Limit == nil || least.Fits(*ns.cap.Limit)) {
		// Larger than what the quota leaves now, not necessarily than the quota: it waits
		// for the quota to be raised or the Kubernetes namespace's other pods to end.
		ns.atLimit = c
		w := Wait{Reason: WaitNSLimit, NamespaceRule: &NamespaceRule{Namespace: ns.name, Rule: RuleQuota},
			Message: fmt.Sprintf("namespace %s is at %s: its running tasks and executors hold %s of the %s it leaves them, and this needs %s; it runs when the quota is raised "+
				"or pods of the Kubernetes namespace end", ns.name, ceilingWords(ns.cap, true), fmtRes(ns.used), fmtRes(*ns.cap.Quota), needWords(c, least))}
		return d.nsHolders(c, w), false
	}
	if capped && !least.Fits(ceil) {
		return Wait{Reason: WaitTooLarge, NamespaceRule: &NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, RuleLimit, RuleQuota)},
			Message: fmt.Sprintf("can never fit its namespace: it needs %s, and namespace %s may hold at most %s (%s)",
				needWords(c, least), ns.name, fmtRes(ceil), ceilingWords(ns.cap, quota))}, false
	}
	if h := ns.atLimit; h != nil {
		return Wait{Reason: WaitNSLimit, NamespaceRule: &NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, RuleLimit, RuleQuota)},
			Message: fmt.Sprintf("behind the older %s, which waits for namespace %s to drop below its limit", describe(h), ns.name)}, false
	}
	if capped && !ns.used.Add(cost).Fits(ceil) {
		ns.atLimit = c
		w := Wait{Reason: WaitNSLimit, NamespaceRule: &NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, RuleLimit, RuleQuota)},
			Message: fmt.Sprintf("namespace %s is at its limit: its running tasks and executors hold %s of the %s it may hold (%s), and this needs %s more; "+
				"it runs as the namespace's running work ends and its idle executors exit", ns.name, fmtRes(ns.used), fmtRes(ceil), ceilingWords(ns.cap, quota), needWords(c, cost))}
		return d.nsHolders(c, w), false
	}
	if c.class == classBorrowing {
		return d.lend(c)
	}
	return Wait{}, true
}

func ruleOf(quota bool, limit, q string) string {
	if quota {
		return q
	}
	return limit
}

func ceilingWords(c Capacity, quota bool) string {
	if quota {
		name := c.QuotaName
		if name == "" {
			name = "of its Kubernetes namespace"
		}
		return "the Kubernetes ResourceQuota " + name
	}
	return "its limit"
}

// needWords words what c needs of its namespace (r: its shards and k of
// its app's executors): "2 CPUs and 128 MB", or "2.1 CPUs and 192 MB (2
// CPUs and 128 MB for its shards, 0.1 CPUs and 64 MB for its app's
// executor)".
func needWords(c *cand, r offers.Resources) string {
	s := c.shards()
	if r == s {
		return fmtRes(r)
	}
	e := r.Sub(s)
	execs := "its app's executor"
	if e != c.sh.exec {
		execs = "its app's executors"
	}
	return fmt.Sprintf("%s (%s for its %s, %s for %s)", fmtRes(r), fmtRes(s), plural(c.sh.n, "shard"), fmtRes(e), execs)
}

// nsHolders names the namespace's own running work as what holds c back.
func (d *decider) nsHolders(c *cand, w Wait) Wait {
	need := d.cost(c)
	w.Needs = &Res{}
	*w.Needs = resOf(need)
	w.Holders = d.holdersWhere(func(job string) bool { return namespace.Of(job) == c.ns.name })
	if len(w.Holders) > 0 {
		parts := make([]string, len(w.Holders))
		for i, h := range w.Holders {
			parts[i] = h.words()
		}
		w.Message += "; held by " + strings.Join(parts, ", ")
	}
	return w
}

// nsOrder is the round's order of namespaces: a heap by class, then
// weighted share (borrowers), then the next entry's age.
type nsOrder []*nsState

func (h nsOrder) Len() int { return len(h) }
func (h nsOrder) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.class != b.class {
		return a.class < b.class
	}
	if a.class == classBorrowing && a.share != b.share {
		return a.share < b.share
	}
	return a.headBefore(b)
}
func (h nsOrder) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *nsOrder) Push(x any) {
	ns := x.(*nsState)
	ns.idx = len(*h)
	*h = append(*h, ns)
}
func (h *nsOrder) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// headBefore orders two namespaces by their next entries: failover
// shards first, then the oldest, then by namespace name.
func (a *nsState) headBefore(b *nsState) bool {
	x, y := a.headC, b.headC
	if (x.fail != nil) != (y.fail != nil) {
		return x.fail != nil
	}
	if s, t := x.since(), y.since(); !s.Equal(t) {
		return s.Before(t)
	}
	return a.name < b.name
}
