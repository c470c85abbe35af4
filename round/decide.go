package round

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// Decide decides one launch round (the package documentation has the
// policy): Begin, then the rest's Finish.
func Decide(v View) Plan {
	p, rest := Begin(v)
	rest.Finish(&p)
	return p
}

// decider is one round: the candidates, the placement on the offers
// (consider, reserve, explain), and the plan. The namespaces, the running
// work and the empty cluster are parts it composes, each owning its state.
type decider struct {
	v     View
	plan  Plan
	cands []cand
	// pendingFailover are the jobs with a failover entry (their ready
	// entries wait); busy counts the candidates resources could serve
	// (busyCands), the rest's too once it is finished (rest.go).
	pendingFailover map[string]bool
	busy            int
	cluster         emptyCluster             // the empty cluster: every agent's total (fit.go)
	present         map[string]bool          // the clusters with an agent in the view (clusters.go)
	never           map[neverKey]*queue.Wait // the never_fits wait of each size and policy seen (nil: it fits)
	// policies are, once a round, what each placement policy (a shape's clusters) may use,
	// by policyID (clusters.go): a backlog holds few policies, and entries are many.
	policies []*policyParts
	keys     map[string]policyID // the ids of the policy keys met (policyKey)
	keyOf    []string            // the policy keys by id ("" first: noPolicy)
	named    []policyNamed       // the first policies by id, as named (policyKey)
	keyBuf   []byte
	// byCluster is the empty cluster split by cluster once a round, each part in its
	// order (clusters.go): the policies' parts share them.
	byCluster map[string]emptyCluster
	occ       occupancy // what the running work holds where (running.go, holders.go)
	ns        spaces    // the namespaces (capacity.go, order.go, limits.go, lending.go, preempt.go)
	// offs are the resources the round matches on: the offers held, or,
	// with none held (estimated), what the agents have free by the
	// running tasks' count, to say why work waits but launch nothing.
	offs      []offers.Offer
	estimated bool
	// estimatedN counts the tasks that fit the estimate (no offer held):
	// past a round's worth (estimateBound) the rest wait with the short
	// reason, unmatched.
	estimatedN int

	// onCluster counts the tasks placed on each cluster this round, and full the clusters
	// that took their ClusterState.MaxTasks (clusters.go), when boundsClusters: one has.
	onCluster      map[string]int
	full           map[string]bool
	boundsClusters bool

	// the round's progress (place)
	m        *offers.Matcher
	failed   map[shape]queue.Wait // the wait of a shape that did not fit
	launched []*cand
	holder   *cand // the reservation's
	placedN  int
	stopped  bool
	capped   string
}

func (d *decider) wait(key, reason, msg string) {
	d.plan.Waiting[key] = queue.Wait{Reason: reason, Message: msg}
}

func (d *decider) waitUntil(key, reason, msg string, until time.Time) {
	d.plan.Waiting[key] = queue.Wait{Reason: reason, Message: msg, Until: until}
	d.wakeAt(until)
}

func (d *decider) wakeAt(t time.Time) {
	if d.plan.WakeAt.IsZero() || t.Before(d.plan.WakeAt) {
		d.plan.WakeAt = t
	}
}

// waitAll gives every candidate the same reason: no round happened.
func (d *decider) waitAll(reason, msg string) {
	for _, c := range d.cands {
		d.wait(c.key, reason, msg)
	}
}

// place matches the candidates on the offers, in the capacity order
// (the package documentation has the policy).
func (d *decider) place() {
	v := d.v
	d.cluster = clusterOf(v.Agents, v.Offers)
	d.present = clustersPresent(d.cluster)
	if slices.ContainsFunc(d.v.Clusters, func(cs ClusterState) bool { return cs.MaxTasks > 0 }) {
		d.boundsClusters, d.onCluster, d.full = true, map[string]int{}, map[string]bool{}
	}
	d.v.agents, d.v.agentCluster = d.cluster, nil
	d.occ = occupancy{v: &d.v, cluster: d.cluster}
	d.offs = v.Offers
	if len(v.Offers) == 0 && len(d.cluster) > 0 {
		// No offer held (declined and filtered for a moment, or not offered
		// yet): the reasons come from what should be free, so they do not
		// flip to no_offers and back between offers.
		d.offs, d.estimated = d.occ.freeByCount(), true
	}
	d.m = offers.NewMatcher(d.offs, v.Executors)
	d.failed = map[shape]queue.Wait{}
	d.ns.policyOf = func(c *cand) policy {
		if c.sh.clusters == noPolicy {
			return policy{}
		}
		return d.policyOf(c)
	}
	d.ns.setup(&d.v, d.cands, d.cluster, d.m, &d.occ)
	for c := d.ns.next(); c != nil; c = d.ns.next() {
		d.consider(c)
		if d.stopped {
			d.ns.rest(d.consider)
		}
	}
	d.finish(d.m, d.launched)
	d.ns.preempt(&d.plan)
}

// consider decides one entry: it launches, or it gets its reason.
func (d *decider) consider(c *cand) {
	v := d.v
	if w := d.clusterWait(c); w != nil {
		d.plan.Waiting[c.key] = *w
		return
	}
	if w := d.neverFits(c); w != nil {
		d.plan.Waiting[c.key] = *w
		return
	}
	n := c.count()
	if d.stopped || (v.MaxTasks > 0 && d.placedN > 0 && d.placedN+n > v.MaxTasks) {
		if !d.stopped {
			d.capped = cappedMessage(v.MaxTasks)
		}
		d.stopped, d.plan.More = true, true
		d.wait(c.key, queue.WaitBehind, d.capped)
		return
	}
	if w, ok := d.ns.gate(c); !ok {
		if !w.Until.IsZero() { // lent capacity a fire needs back then
			d.wakeAt(w.Until)
		}
		d.plan.Waiting[c.key] = w
		return
	}
	if c.sh.clusters != noPolicy {
		if w, ok := d.ns.gateClusters(c, d.policyOf(c).use); !ok {
			if !w.Until.IsZero() { // lent capacity a fire needs back then
				d.wakeAt(w.Until)
			}
			d.plan.Waiting[c.key] = w
			return
		}
	}
	if len(d.offs) == 0 {
		d.wait(c.key, queue.WaitNoOffers, "no resources on offer: waiting for the cluster engine to offer resources")
		return
	}
	sh := c.shape()
	// An entry whose clusters its namespace narrowed (cand.on) fares unlike its shape's others.
	if w, ok := d.failed[sh]; ok && c.on() == nil {
		d.plan.Waiting[c.key] = d.ns.annotate(c, w)
		return
	}
	if d.estimated && d.estimatedN >= d.estimateBound() {
		d.wait(c.key, queue.WaitNoOffers, "no resources on offer: waiting for the cluster engine to offer resources")
		return
	}
	absent := 0
	if !sh.exec.IsZero() {
		absent = d.m.Absent(sh.app)
	}
	ok, reason, detail := d.placeOn(c)
	if ok && d.estimated {
		d.estimatedN += c.count()
		w := queue.Wait{Reason: queue.WaitNoOffers, Message: "no resources on offer at the moment, though what it needs should be free by the running tasks' count: " +
			"waiting for the cluster engine to offer them"}
		d.plan.Waiting[c.key] = d.occ.withExecutors(c, d.occ.withHolders(c, w))
		d.plan.Withheld = true
		return
	}
	if ok {
		d.placed(c, absent)
		return
	}
	d.notPlaced(c, reason, detail)
}

// placed notes c's launch: absent is how many agents did not run its
// app's executor before it was placed.
func (d *decider) placed(c *cand, absent int) {
	sh, n, maxTasks := c.shape(), c.count(), d.v.MaxTasks
	d.launched = append(d.launched, c)
	d.placedN += n
	d.onClusters()
	started := 0
	if !sh.exec.IsZero() {
		started = absent - d.m.Absent(sh.app)
	}
	d.ns.placedIn(c, started)
	if maxTasks > 0 && n > maxTasks { // alone in its round, committed in parts
		d.plan.Chunked, d.stopped, d.capped = true, true, cappedMessage(maxTasks)
	}
}

// notPlaced gives c, which does not fit the offers now, its wait: the
// first such entry holds the reservation, the others wait behind it.
func (d *decider) notPlaced(c *cand, reason offers.Reason, detail string) {
	sh := c.shape()
	w := d.explain(c, reason, detail)
	if reason != offers.ReasonInvalid {
		w = d.occ.withHolders(c, w)
	}
	if d.holder == nil {
		d.holder = c
		d.plan.Waiting[c.key] = d.ns.annotate(c, d.reserve(c, d.m, w))
		if c.on() == nil {
			d.failed[sh] = d.behind(c, w)
		}
		return
	}
	if d.plan.Reservation.Key != "" {
		w = d.behind(d.holder, w)
	}
	if c.on() == nil {
		d.failed[sh] = w
	}
	d.plan.Waiting[c.key] = d.ns.annotate(c, w)
}

// behind words the wait of an entry after the reservation's holder.
func (d *decider) behind(holder *cand, w queue.Wait) queue.Wait {
	r := d.plan.Reservation
	if r.Key == "" {
		return w
	}
	return queue.Wait{Reason: queue.WaitReservation, Message: fmt.Sprintf("behind the reservation of the older %s, which holds %s of what is free now "+
		"and takes what frees up on the agents it can use first; %s", describe(holder), fmtRes(r.Held), w.Message),
		Needs: w.Needs, Holders: w.Holders}
}

func describe(c *cand) string {
	if c.fail != nil {
		return fmt.Sprintf("failover shard %d of job %s", c.fail.Item, c.job)
	}
	return "execution of job " + c.job
}

func cappedMessage(max int) string {
	return fmt.Sprintf("behind older work: a round launches at most %d shards (one registry commit each round), "+
		"taken oldest first; the next round follows at once", max)
}

// finish turns the matcher's placements into the plan's launches, grouped
// per entry in the round's order, and says which offers go back.
func (d *decider) finish(m *offers.Matcher, launched []*cand) {
	op := m.Plan()
	// A launch belongs to its entry: a job's execution (every shard placed of it), or one
	// failover shard; a job may have several failover shards in one round.
	type gk struct {
		kind  offers.Kind
		job   string
		shard int // a failover entry's; -1 for an execution
	}
	shardOf := func(kind offers.Kind, shard int) int {
		if kind == offers.Failover {
			return shard
		}
		return -1
	}
	by := make(map[gk][]offers.Launch, len(launched))
	ids := make([]string, 0, len(op.Launches))
	for id := range op.Launches {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, l := range op.Launches[id] {
			k := gk{l.Request.Kind, l.Request.Job, shardOf(l.Request.Kind, l.Request.Shard)}
			by[k] = append(by[k], l)
		}
	}
	for _, c := range launched {
		job, a, _ := d.v.Jobs.Lookup(c.job)
		item := -1
		if c.fail != nil {
			item = c.fail.Item
		}
		ls := by[gk{c.kind(), c.job, shardOf(c.kind(), item)}]
		slices.SortFunc(ls, func(a, b offers.Launch) int { return a.Request.Shard - b.Request.Shard })
		for _, l := range ls {
			d.plan.Launches = append(d.plan.Launches, Launch{Launch: l, Job: job, App: a, Ready: c.ready, Failover: c.fail,
				Borrowing: c.class == classBorrowing})
		}
	}
	d.plan.Decline = op.Decline
	if d.estimated {
		d.plan.Decline = nil // nothing was offered
	}
	if d.plan.More && len(d.plan.Launches) > 0 {
		// The offers this round left untouched are for the next round,
		// which follows at once with the work after this round's.
		d.plan.Decline = d.keptForMore(d.plan.Decline)
	}
	d.busy = d.busyCands()
	d.plan.Busy, d.plan.Idle = len(launched) < d.busy, d.busy == 0
}

// keptForMore is what a round that launches with more to follow declines of decline, the
// offers it left untouched. Stopped at View.MaxTasks, it declines none: the entries after
// the stop were not tried, and the next round places them on these offers. Stopped only
// by clusters that took their round's tasks (ClusterState.MaxTasks), it keeps theirs and
// declines the other clusters' offers: every entry was tried on those, and none fit, so
// the next round would find them as they are; an engine that offers an agent's freed
// resources only with its outstanding offer's would never offer them again while a
// cluster that always fills its bound (a Kubernetes cluster at its client's rate) keeps
// every round's More set, and the other cluster's rounds would place on ever less.
func (d *decider) keptForMore(decline []string) []string {
	if d.stopped || len(d.full) == 0 {
		return nil
	}
	clusterOf := make(map[string]string, len(d.offs))
	for _, o := range d.offs {
		clusterOf[o.ID] = o.Cluster
	}
	var out []string
	for _, id := range decline {
		if !d.full[clusterOf[id]] {
			out = append(out, id)
		}
	}
	return out
}

// busyCands counts the candidates resources could serve (not those that
// can never fit).
func (d *decider) busyCands() int {
	n := 0
	for i := range d.cands {
		if w, ok := d.plan.Waiting[d.cands[i].key]; !ok || w.Reason != queue.WaitTooLarge {
			n++
		}
	}
	return n
}

func fmtUntil(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func shardList(items []int) string { return strings.Trim(fmt.Sprint(items), "[]") }
