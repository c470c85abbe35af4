package round

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// Fire is a cron fire expected soon: a job's next instant, and what its
// execution will need (its shards and its app's executor).
type Fire struct {
	Job  string
	At   time.Time
	Need offers.Resources
}

// DefaultHorizon is how far ahead a round looks at fires when the view
// sets none: work with no estimate of its end borrows only what no fire
// needs within it, and work expected to run longer is treated alike.
const DefaultHorizon = time.Hour

func (v View) horizon() time.Duration {
	if v.Horizon > 0 {
		return v.Horizon
	}
	return DefaultHorizon
}

// lender decides whether a borrower may take what the namespaces'
// fires will need of their unused guarantees (lend). It owns the
// protection (rebuilt after a launch within a guarantee), what is free by
// the running tasks' count, and this round's launches against it.
type lender struct {
	v         *View
	s         *spaces
	prot      *protection
	dirty     bool                        // a launch within a guarantee since prot was built
	fireExec  map[string]offers.Resources // a fire's job → its app's executor when one runs (fireNeed)
	placed    offers.Resources            // this round's launches: shards and the executors they start
	free      offers.Resources            // free by the running tasks' count (freeNow)
	freeKnown bool
	// byCluster: some namespace has a guarantee on some cluster, so what is free and
	// placed is kept per cluster too (placedOn, freeOn), and the protection has a part
	// per cluster (protection.on).
	byCluster bool
	placedOn  map[string]offers.Resources
	freeOn    map[string]offers.Resources
	present   map[string]bool // the clusters with an agent in the view (takesWork)
}

// launched notes a launch that takes r of what is free (on holds what it takes on each
// cluster, when kept); within its namespace's guarantee, it changes what the guarantees
// protect.
func (l *lender) launched(r offers.Resources, on map[string]offers.Resources, guaranteed bool) {
	l.placed = l.placed.Add(r)
	for cl, x := range on {
		if l.placedOn == nil {
			l.placedOn = map[string]offers.Resources{}
		}
		l.placedOn[cl] = l.placedOn[cl].Add(x)
	}
	if guaranteed {
		l.dirty = true
	}
}

// freeNow is what the cluster has free by the running tasks' count (the
// apps' executors counted, idle ones too), less this round's launches.
func (l *lender) freeNow() offers.Resources {
	l.countFree()
	return l.free.Sub(l.placed)
}

// freeNowOn is freeNow on one cluster.
func (l *lender) freeNowOn(cl string) offers.Resources {
	l.countFree()
	return l.freeOn[cl].Sub(l.placedOn[cl])
}

func (l *lender) countFree() {
	if l.freeKnown {
		return
	}
	l.freeKnown = true
	for _, o := range l.s.occ.freeByCount() {
		l.free = l.free.Add(o.Free)
		if l.byCluster {
			if l.freeOn == nil {
				l.freeOn = map[string]offers.Resources{}
			}
			l.freeOn[o.Cluster] = l.freeOn[o.Cluster].Add(o.Free)
		}
	}
}

// protection is, over time, how much of the namespaces' unused
// guarantees their fires will need: after the fire at times[i], total[i]
// in all. A fire of a namespace adds its need until the namespace's
// unused guarantee is covered; a job counts once (its next fire), since
// it never runs two executions at once. Only instants where the total
// grows are kept.
type protection struct {
	times []time.Time
	total []offers.Resources
	ns    []*nsState // whose fire it is
	job   []string
	// own[ns] is the namespace's own part after each of its entries:
	// (index into times, protected so far).
	own map[*nsState][]ownStep
	// on are, by cluster, what the fires need of the namespaces' unused guarantees on
	// that cluster, built alike: a fire that would run within its namespace's guarantee
	// on a cluster (fireCluster) counts there, not against the global guarantee.
	on map[string]*protection

	cum, prev map[*nsState]offers.Resources // while it is built (add)
}

func newProtection() *protection {
	return &protection{own: map[*nsState][]ownStep{}, cum: map[*nsState]offers.Resources{}, prev: map[*nsState]offers.Resources{}}
}

// add notes a fire of ns that needs need, ns's unused guarantee being unused: what ns
// protects grows with its fires until it covers its unused guarantee.
func (p *protection) add(ns *nsState, f Fire, need, unused offers.Resources) {
	p.cum[ns] = p.cum[ns].Add(need)
	prot := offers.Resources{CPU: min(unused.CPU, p.cum[ns].CPU), MemMB: min(unused.MemMB, p.cum[ns].MemMB)}
	if prot == p.prev[ns] {
		return
	}
	var total offers.Resources
	if n := len(p.total); n > 0 {
		total = p.total[n-1]
	}
	total = total.Add(prot.Sub(p.prev[ns]))
	p.prev[ns] = prot
	p.own[ns] = append(p.own[ns], ownStep{i: len(p.times), prot: prot})
	p.times = append(p.times, f.At)
	p.total = append(p.total, total)
	p.ns = append(p.ns, ns)
	p.job = append(p.job, f.Job)
}

type ownStep struct {
	i    int
	prot offers.Resources
}

// protect builds the protection from the view's fires and the
// namespaces' usage now.
func (l *lender) protect() *protection {
	if l.prot != nil && !l.dirty {
		return l.prot
	}
	l.dirty = false
	p := newProtection()
	l.prot = p
	until := l.v.Now.Add(l.v.horizon())
	for _, f := range sortedFires(l.v.Fires) {
		if !f.At.After(l.v.Now) || f.At.After(until) {
			continue
		}
		ns := l.s.byName[namespace.Of(f.Job)]
		if ns == nil {
			continue
		}
		if cl, unused := l.fireCluster(p, ns, f); cl != "" {
			if p.on == nil {
				p.on = map[string]*protection{}
			}
			q := p.on[cl]
			if q == nil {
				q = newProtection()
				p.on[cl] = q
			}
			q.add(ns, f, l.fireNeed(f), unused)
			continue
		}
		if ns.cap.Guarantee.IsZero() {
			continue
		}
		r := ns.rest()
		unused := offers.Resources{CPU: max(ns.cap.Guarantee.CPU-r.CPU, 0), MemMB: max(ns.cap.Guarantee.MemMB-r.MemMB, 0)}
		p.add(ns, f, l.fireNeed(f), unused)
	}
	return p
}

// fireCluster is the cluster whose guarantee of ns a fire of ns would run within, as the
// round places it (guaranteedOn): the first of its job's clusters, in order, where ns has
// a guarantee its fires so far leave unused, with what is unused there ("": none, the
// fire counts against the global guarantee).
func (l *lender) fireCluster(p *protection, ns *nsState, f Fire) (string, offers.Resources) {
	if !l.byCluster || ns.usedOn == nil {
		return "", offers.Resources{}
	}
	job, _, _ := l.v.Jobs.Lookup(f.Job)
	named := job.Clusters
	if len(named) == 0 {
		named = l.v.NamespaceClusters[ns.name]
	}
	if len(named) == 0 {
		for _, cs := range l.v.Clusters {
			named = append(named, cs.Name)
		}
	}
	for _, cl := range named {
		g := ns.cap.PerCluster[cl].Guarantee
		if g.IsZero() || !l.takesWork(cl) {
			continue // the fire runs elsewhere: within the global guarantee, if any
		}
		u := ns.usedOn[cl]
		unused := offers.Resources{CPU: max(g.CPU-u.CPU, 0), MemMB: max(g.MemMB-u.MemMB, 0)}
		if unused.CPU <= 0 || unused.MemMB <= 0 {
			continue // no shard fits within it
		}
		if q := p.on[cl]; q != nil && q.prev[ns] == unused {
			continue // the fires before cover it
		}
		return cl, unused
	}
	return "", offers.Resources{}
}

// fireNeed is what a fire needs of what is free: its shards, and its
// app's executor unless one runs already (counted in its namespace's
// usage; should it exit before the fire, what it frees is what the fire
// needs again).
func (l *lender) fireNeed(f Fire) offers.Resources {
	e, ok := l.fireExec[f.Job]
	if !ok {
		if l.fireExec == nil {
			l.fireExec = map[string]offers.Resources{}
		}
		if _, a, _ := l.v.Jobs.Lookup(f.Job); l.s.execUp[a.AppName] {
			e = offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}
		}
		l.fireExec[f.Job] = e
	}
	return offers.Resources{CPU: max(f.Need.CPU-e.CPU, 0), MemMB: max(f.Need.MemMB-e.MemMB, 0)}
}

// others is what namespaces other than ns protect after entry i.
func (p *protection) others(ns *nsState, i int) offers.Resources {
	steps := p.own[ns]
	k := sort.Search(len(steps), func(j int) bool { return steps[j].i > i })
	if k == 0 {
		return p.total[i]
	}
	return p.total[i].Sub(steps[k-1].prot)
}

// expectedEnd is when c's run would end if it started now: the p90 of its
// job's recent runs, or its timeout (zero: no estimate).
func (l *lender) expectedEnd(c *cand) (time.Time, estimate.Basis, time.Duration) {
	job, _, _ := l.v.Jobs.Lookup(c.job)
	timeout := time.Duration(job.TimeoutSeconds) * time.Second
	typical := l.v.Typical[c.job]
	end, basis := estimate.End(l.v.Now, typical, timeout)
	switch basis {
	case estimate.BasisP90:
		return end, basis, typical.P90
	case estimate.BasisTimeout:
		return end, basis, timeout
	}
	return end, basis, 0
}

// lend decides whether c may borrow: what is free after it launched must
// still hold what other namespaces' fires need of their unused guarantees
// before c is expected to end (with no estimate: within the horizon). An
// entry that does not fit what is free now goes on to the matcher, which
// says why (and may give it the reservation). A wait's Until is the fire
// it would make late: the round wakes then.
func (l *lender) lend(c *cand) (queue.Wait, bool) {
	p := l.protect()
	if len(p.times) == 0 {
		return queue.Wait{}, true
	}
	end, basis, dur := l.expectedEnd(c)
	k := len(p.times)
	if basis != estimate.BasisNone {
		k = sort.Search(len(p.times), func(i int) bool { return !p.times[i].Before(end) })
	}
	after := l.freeNow().Sub(l.s.footprint(c))
	if k == 0 || after.CPU < 0 || after.MemMB < 0 {
		return queue.Wait{}, true
	}
	short := func(i int) bool {
		o := p.others(c.ns, i)
		return after.CPU < o.CPU || after.MemMB < o.MemMB
	}
	if !short(k - 1) {
		return queue.Wait{}, true
	}
	i := sort.Search(k, short) // the first fire it would make late
	ns, fire := p.ns[i], p.job[i]
	return queue.Wait{Reason: queue.WaitGuaranteeNeeded, NamespaceRule: &queue.NamespaceRule{Namespace: c.ns.name, Rule: queue.RuleGuaranteeNeeded}, Until: p.times[i],
		Message: fmt.Sprintf("namespace %s is above its guarantee, so this would borrow idle capacity, but namespace %s needs its guarantee back "+
			"at %s for its cron fire of job %s (%s of what is free must stay free for the fires by then; %s would be left); "+
			"its guarantee is lent only to work expected to end before that: %s",
			c.ns.name, ns.name, fmtUntil(p.times[i]), namespace.Name(fire), fmtRes(p.others(c.ns, i)), fmtRes(after), l.endWords(end, basis, dur))}, false
}

// endWords words when an entry that may borrow would end.
func (l *lender) endWords(end time.Time, basis estimate.Basis, dur time.Duration) string {
	switch basis {
	case estimate.BasisP90:
		return fmt.Sprintf("this one is expected to end at %s (the p90 of its recent runs: %s)", fmtUntil(end), dur)
	case estimate.BasisTimeout:
		return fmt.Sprintf("this one may run until %s (its timeout: %s)", fmtUntil(end), dur)
	}
	return fmt.Sprintf("this one has no estimate (too few recent runs, no timeoutSeconds), so it borrows only what no fire needs within the next %s", l.v.horizon())
}

// takesWork reports whether a cluster takes new work now: not drained, with an agent in
// the view.
func (l *lender) takesWork(cl string) bool {
	if l.present == nil {
		l.present = clustersPresent(l.v.agents)
	}
	return l.present[cl] && !slices.ContainsFunc(l.v.Clusters, func(cs ClusterState) bool { return cs.Name == cl && cs.Drained })
}

// onCluster reports whether some namespace's fires are protected on some cluster.
func (l *lender) onCluster() bool { return l.byCluster && len(l.protect().on) > 0 }

// lendOn keeps other namespaces' per-cluster guarantees for their coming fires, as lend
// keeps the global ones: on each cluster of on, what is free there after c launched
// must still hold what other namespaces' fires need of their unused guarantees there
// before c is expected to end. A borrower is left off the clusters where it would not
// (it waits guarantee_needed when that is all of them); an entry within its namespace's
// global guarantee, which is not lent, tries them last. An entry within a cluster's
// guarantee is not asked (gateClusters): it holds its own.
func (l *lender) lendOn(c *cand, on []string) ([]string, queue.Wait, bool) {
	p := l.protect()
	end, basis, dur := l.expectedEnd(c)
	foot := l.s.footprint(c)
	var keep, short, parts []string
	var first time.Time // the first fire it would make late
	for _, cl := range on {
		q := p.on[cl]
		if q == nil || len(q.times) == 0 {
			keep = append(keep, cl)
			continue
		}
		k := len(q.times)
		if basis != estimate.BasisNone {
			k = sort.Search(len(q.times), func(i int) bool { return !q.times[i].Before(end) })
		}
		after := l.freeNowOn(cl).Sub(foot)
		late := func(i int) bool {
			o := q.others(c.ns, i)
			return after.CPU < o.CPU || after.MemMB < o.MemMB
		}
		if k == 0 || after.CPU < 0 || after.MemMB < 0 || !late(k-1) {
			keep = append(keep, cl) // it does not fit there now (the matcher says why), or leaves enough
			continue
		}
		short = append(short, cl)
		i := sort.Search(k, late)
		// worded as lend's, which Redact knows: a reader of c's namespace only learns that
		// another namespace's fire needs the cluster then
		parts = append(parts, fmt.Sprintf("on cluster %s namespace %s needs its guarantee back at %s for its cron fire of job %s "+
			"(%s of what is free there must stay free for the fires by then; %s would be left)",
			cl, q.ns[i].name, fmtUntil(q.times[i]), namespace.Name(q.job[i]), fmtRes(q.others(c.ns, i)), fmtRes(after)))
		if first.IsZero() || q.times[i].Before(first) {
			first = q.times[i]
		}
	}
	if len(short) == 0 {
		return on, queue.Wait{}, true
	}
	if c.class != classBorrowing {
		return append(keep, short...), queue.Wait{}, true
	}
	if len(keep) > 0 {
		return keep, queue.Wait{}, true
	}
	return nil, queue.Wait{Reason: queue.WaitGuaranteeNeeded, NamespaceRule: &queue.NamespaceRule{Namespace: c.ns.name, Rule: queue.RuleGuaranteeNeeded}, Until: first,
		Message: fmt.Sprintf("namespace %s is above its guarantee, so this would borrow idle capacity, but %s; "+
			"a guarantee is lent only to work expected to end before that: %s",
			c.ns.name, strings.Join(parts, "; "), l.endWords(end, basis, dur))}, false
}

// sortedFires returns the fires by instant (the view's, if sorted).
func sortedFires(fs []Fire) []Fire {
	if slices.IsSortedFunc(fs, func(a, b Fire) int { return a.At.Compare(b.At) }) {
		return fs
	}
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b Fire) int { return a.At.Compare(b.At) })
	return fs
}
