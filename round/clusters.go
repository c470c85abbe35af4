package round

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// Several clusters below the seam (docs/clusters.md): the agents and offers carry their
// cluster (Agent.Cluster, offers.Offer.Cluster), and each entry is placed on the clusters
// its job, else its namespace, names, in order of preference: all its shards on the first
// of them with room for all, unless the job lets them spread over the clusters named. A
// cluster drained, or with no agent in the view (unreachable, or not configured), takes
// no new work. With no cluster in the view (View.Clusters empty: one engine) none of this
// applies and the round is as it always was.

// ClusterState is one of the scheduler's clusters as a round sees it.
type ClusterState struct {
	Name string
	// Drained: no new work is placed there (ejctl cluster drain); what runs there runs on.
	Drained bool
	// MaxTasks bounds the tasks a round places there (0: View.MaxTasks alone): its engine's
	// (engine.Capabilities.RoundTasks). Once a round placed as many, the cluster takes no
	// more work this round (the entry that reaches it goes whole, as with View.MaxTasks),
	// and the next round follows at once.
	MaxTasks int
	// Busy: the cluster's last launches are still being sent (its engine has not answered
	// their ACCEPTs). It takes no work this round, as one that took its round's tasks; its
	// offers are left out of the view by the caller (they stay held, neither placed on nor
	// declined), and its launches in flight are already counted as running.
	Busy bool
}

// policy is where one entry may be placed this round.
type policy struct {
	use    []string // the clusters it may be placed on now, in order of preference
	spread bool     // its shards may spread over use
	// out are the clusters it names that take no work now, with why ("drained", …).
	out []string
	// full are the clusters of out that took their round's tasks (ClusterState.MaxTasks)
	// or are busy launching them (ClusterState.Busy): the entry goes in a later round.
	full int
}

// policyID names a placement policy within a round: the index of its key (policyKey) in
// the round's keys. Shapes carry it, not the key: the maps keyed by shape (the never_fits
// memo, the failed shapes) hash and compare a number where a backlog naming clusters has
// many shapes.
type policyID int32

// noPolicy is the shapes' policy with no cluster in the view: anywhere, one engine.
const noPolicy policyID = 0

// policyKey is what decides an entry's policy, in its shape (entries of one shape place
// alike): the clusters named and whether it spreads, as the id of its key; noPolicy with
// no cluster in the view.
func (d *decider) policyKey(job string, named []string, spread bool) policyID {
	if len(d.v.Clusters) == 0 {
		return noPolicy
	}
	if len(named) == 0 && len(d.v.NamespaceClusters) > 0 {
		named = d.v.NamespaceClusters[namespace.Of(job)]
	}
	// Every entry of a backlog asks, and a round holds few distinct policies: the first
	// ones met are compared as they are named, cheaper than building the key and hashing
	// it; past them the key is built in a reused buffer and looked up.
	for id := 1; id < len(d.named); id++ {
		if pn := &d.named[id]; pn.spread == spread && slices.Equal(pn.clusters, named) {
			return policyID(id)
		}
	}
	b := append(d.keyBuf[:0], "clusters="...)
	for i, n := range named {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
	}
	if spread {
		b = append(b, "+spread"...)
	}
	d.keyBuf = b
	if id, ok := d.keys[string(b)]; ok {
		return id
	}
	if d.keys == nil {
		d.keys, d.keyOf, d.named = map[string]policyID{}, []string{""}, make([]policyNamed, 1, maxNamed)
	}
	k := string(b)
	id := policyID(len(d.keyOf))
	d.keys[k], d.keyOf = id, append(d.keyOf, k)
	if len(d.named) < maxNamed {
		d.named = append(d.named, policyNamed{clusters: slices.Clone(named), spread: spread})
	}
	return id
}

// policyNamed is a policy as entries name it (policyKey): its clusters and whether it
// spreads.
type policyNamed struct {
	clusters []string
	spread   bool
}

// maxNamed bounds the policies policyKey compares as they are named (the first met; the
// first entry of d.named is noPolicy's, unused): past a few, comparing each costs more
// than a key's hash.
const maxNamed = 9

// policyOf reads c's policy from its shape's key and the clusters' state.
func (d *decider) policyOf(c *cand) policy { return d.partsOf(c).p }

// policyParts is one placement policy's part of the round: the policy, the agents it may
// use (usable) and those split by cluster in its order of preference (parts). They are
// the round's empty cluster, or parts of it (byCluster), or, for some of several
// clusters, a copy of those: read, never written.
type policyParts struct {
	p      policy
	usable emptyCluster
	parts  []emptyCluster
}

// partsOf is c's policy's parts, worked out once a round per policy.
func (d *decider) partsOf(c *cand) *policyParts {
	id := c.sh.clusters
	if int(id) < len(d.policies) && d.policies[id] != nil {
		return d.policies[id]
	}
	pp := &policyParts{p: d.newPolicy(d.keyOf[id])}
	if d.byCluster == nil {
		d.byCluster = d.cluster.split()
	}
	pp.parts = make([]emptyCluster, len(pp.p.use))
	n := 0 // the agents of the clusters it may use
	for i, cl := range pp.p.use {
		if slices.Index(pp.p.use, cl) == i { // a cluster named twice has its agents in its first part
			pp.parts[i] = d.byCluster[cl]
			n += len(pp.parts[i])
		}
	}
	switch {
	case len(pp.parts) == 1:
		pp.usable = pp.parts[0]
	case n == len(d.cluster): // every agent's cluster
		pp.usable = d.cluster
	default:
		pp.usable = make(emptyCluster, 0, n)
		for _, a := range d.cluster {
			if slices.Contains(pp.p.use, a.Cluster) {
				pp.usable = append(pp.usable, a)
			}
		}
	}
	if pp.usable == nil {
		pp.usable = d.cluster[:0]
	}
	if int(id) >= len(d.policies) {
		d.policies = append(d.policies, make([]*policyParts, int(id)+1-len(d.policies))...)
	}
	d.policies[id] = pp
	return pp
}

func (d *decider) newPolicy(key string) policy {
	named, spread := parsePolicy(key)
	if len(named) == 0 {
		for _, cs := range d.v.Clusters {
			named = append(named, cs.Name)
		}
	}
	var p policy
	p.spread = spread
	for _, n := range named {
		i := slices.IndexFunc(d.v.Clusters, func(cs ClusterState) bool { return cs.Name == n })
		switch {
		case i < 0:
			p.out = append(p.out, n+" (not configured)")
		case d.v.Clusters[i].Drained:
			p.out = append(p.out, n+" (drained)")
		case d.v.Clusters[i].Busy:
			p.out = append(p.out, n+" (still launching its last round's tasks)")
			p.full++
		case !d.present[n]:
			p.out = append(p.out, n+" (no agent reachable)")
		case d.full[n]:
			p.out = append(p.out, fmt.Sprintf("%s (took its round's %d tasks)", n, d.v.Clusters[i].MaxTasks))
			p.full++
		default:
			p.use = append(p.use, n)
		}
	}
	return p
}

// onClusters counts c's tasks, just placed, on their clusters: a cluster that reaches its
// ClusterState.MaxTasks takes no more work this round (newPolicy), and the next round
// follows at once.
func (d *decider) onClusters() {
	if !d.boundsClusters {
		return
	}
	for cl, n := range d.m.LastTasksByCluster() {
		d.onCluster[cl] += n
		i := slices.IndexFunc(d.v.Clusters, func(cs ClusterState) bool { return cs.Name == cl })
		if i < 0 || d.full[cl] {
			continue
		}
		if bound := d.v.Clusters[i].MaxTasks; bound > 0 && d.onCluster[cl] >= bound {
			d.full[cl] = true
			clear(d.policies) // worked out again without it
			d.plan.More = true
		}
	}
}

func parsePolicy(key string) (named []string, spread bool) {
	k, ok := strings.CutPrefix(key, "clusters=")
	if !ok {
		return nil, false
	}
	k, spread = strings.CutSuffix(k, "+spread")
	if k == "" {
		return nil, spread
	}
	return strings.Split(k, ","), spread
}

// clusterWait is the wait of an entry none of whose clusters takes work now (nil: one
// does, or the view has no cluster).
func (d *decider) clusterWait(c *cand) *queue.Wait {
	if c.sh.clusters == noPolicy {
		return nil
	}
	p := d.policyOf(c)
	if len(p.use) > 0 {
		return nil
	}
	if p.full > 0 && p.full == len(p.out) {
		return &queue.Wait{Reason: queue.WaitBehind,
			Message: "the clusters it may run on took as many tasks as they launch in a round, or are still launching them: " + strings.Join(p.out, ", ") + "; it goes in a later round"}
	}
	return &queue.Wait{Reason: queue.WaitClusterUnavailable,
		Message: "none of the clusters it may run on takes work now: " + strings.Join(p.out, ", ")}
}

// placeOn places c on its clusters: on the first of them where it fits whole, or, when
// it may spread, over all of them. Not placed, the detail names each cluster tried.
func (d *decider) placeOn(c *cand) (ok bool, reason offers.Reason, detail string) {
	if c.sh.clusters == noPolicy {
		return d.m.Place(c.requests())
	}
	p := d.policyOf(c)
	use := p.use
	if on := c.on(); on != nil {
		use = on
	}
	if p.spread {
		ok, reason, detail = d.m.PlaceIn(c.requests(), use...)
		if !ok {
			detail = "on clusters " + strings.Join(use, ", ") + ": " + detail
		}
		return ok, reason, detail
	}
	var tried []string
	for _, cl := range use {
		ok, r, dt := d.m.PlaceIn(c.requests(), cl)
		if ok {
			return true, "", ""
		}
		if reason == "" || reason == offers.ReasonNoOffers {
			reason = r
		}
		tried = append(tried, fmt.Sprintf("on cluster %s: %s", cl, dt))
	}
	if len(p.out) > 0 {
		tried = append(tried, "not on "+strings.Join(p.out, ", "))
	}
	return false, reason, strings.Join(tried, "; ")
}

// clusterOfAgent is the cluster of an agent id: its agent's in the view, else the
// cluster its qualified id names, else, for an id naming none (recorded before the
// scheduler ran on several clusters), the home cluster (the first); "" with no cluster
// in the view.
func (v *View) clusterOfAgent(id string) string {
	if len(v.Clusters) == 0 {
		return ""
	}
	if v.agentCluster == nil {
		v.agentCluster = make(map[string]string, len(v.agents))
		for _, a := range v.agents {
			v.agentCluster[a.ID] = a.Cluster
		}
	}
	if cl, ok := v.agentCluster[id]; ok && cl != "" {
		return cl
	}
	if name, _, ok := strings.Cut(id, ":"); ok && slices.ContainsFunc(v.Clusters, func(cs ClusterState) bool { return cs.Name == name }) {
		return name
	}
	return v.Clusters[0].Name
}

// Per-cluster capacities (Capacity.PerCluster). A namespace's work on a cluster counts
// against that cluster's guarantee and limit; what its per-cluster guarantees do not
// cover counts against its global guarantee, and all of it against its global limit. An
// entry within a cluster's guarantee is served first like one within the global
// guarantee, tried on that cluster first, and preempts only there (preempt.go); a cluster
// where it would take its namespace past that cluster's limit is left out of its
// placement this round.

// guaranteedOn is the first cluster c may use now whose guarantee of its namespace it
// fits within, taking cost ("": none).
func (s *spaces) guaranteedOn(ns *nsState, c *cand, cost offers.Resources) string {
	if ns.usedOn == nil || s.policyOf == nil {
		return ""
	}
	for _, cl := range s.policyOf(c).use {
		cc, ok := ns.cap.PerCluster[cl]
		if ok && !cc.Guarantee.IsZero() && ns.usedOn[cl].Add(cost).Fits(cc.Guarantee) {
			return cl
		}
	}
	return ""
}

// gateClusters narrows c's clusters to those where its namespace's per-cluster limits
// leave room for it (cand.on), the cluster whose guarantee it is within first; when none
// is left it waits, and the reason names each cluster's limit. Then it keeps other
// namespaces' per-cluster guarantees for their coming fires (lender.lendOn): a borrower
// is left off the clusters where it would take what those fires need there.
func (s *spaces) gateClusters(c *cand, use []string) (queue.Wait, bool) {
	if c.pc != nil {
		c.pc.on = nil
	}
	if len(use) == 0 {
		return queue.Wait{}, true
	}
	on := use
	if c.ns.usedOn != nil {
		var w queue.Wait
		var ok bool
		if on, w, ok = s.limitClusters(c, use); !ok {
			return w, false
		}
	}
	if c.guarOn() == "" && s.lend.onCluster() {
		var w queue.Wait
		var ok bool
		if on, w, ok = s.lend.lendOn(c, on); !ok {
			return w, false
		}
	}
	if len(on) < len(use) || (len(on) > 0 && on[0] != use[0]) {
		if c.pc == nil {
			c.pc = &clusterPick{}
		}
		c.pc.on = on
	}
	return queue.Wait{}, true
}

// limitClusters is use less the clusters where c would take its namespace past its limit
// there, the cluster whose guarantee it is within first (ok false: none is left, and c
// waits w).
func (s *spaces) limitClusters(c *cand, use []string) (on []string, w queue.Wait, ok bool) {
	ns := c.ns
	cost, least := s.cost(c), c.leastCost()
	on = make([]string, 0, len(use))
	var full, reached []string
	never := true
	for _, cl := range use {
		cc, ok := ns.cap.PerCluster[cl]
		switch {
		case !ok || cc.Limit == nil:
			on, never = append(on, cl), false
		case !least.Fits(*cc.Limit):
			full = append(full, fmt.Sprintf("on cluster %s it may hold at most %s", cl, fmtRes(*cc.Limit)))
		case ns.atLimitOn[cl] != nil:
			never = false
			full = append(full, fmt.Sprintf("on cluster %s it is behind the older %s, which waits for room under the %s it may hold there",
				cl, describe(ns.atLimitOn[cl]), fmtRes(*cc.Limit)))
		case !ns.usedOn[cl].Add(cost).Fits(*cc.Limit):
			never = false
			reached = append(reached, cl)
			full = append(full, fmt.Sprintf("on cluster %s its work holds %s%s of the %s it may hold there", cl, fmtRes(ns.usedOn[cl]),
				retiringWords(ns.retiringOn[cl]), fmtRes(*cc.Limit)))
		default:
			on, never = append(on, cl), false
		}
	}
	if len(on) == 0 {
		if never {
			return nil, queue.Wait{Reason: queue.WaitTooLarge, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: queue.RuleLimit},
				Message: fmt.Sprintf("can never fit its namespace on the clusters it may run on now: it needs %s, and namespace %s: %s",
					needWords(c, least), ns.name, strings.Join(full, "; "))}, false
		}
		// As with the global limit, the namespace's later entries wait behind this one on
		// the clusters whose limit it waits for: a smaller one would otherwise take each
		// bit of room that frees up there, and this one would never run. An entry that
		// runs on another cluster of its list holds nothing back.
		for _, cl := range reached {
			if ns.atLimitOn == nil {
				ns.atLimitOn = map[string]*cand{}
			}
			ns.atLimitOn[cl] = c
		}
		w := queue.Wait{Reason: queue.WaitNSLimit, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: queue.RuleLimit},
			Message: fmt.Sprintf("namespace %s is at its limit on every cluster it may run on now: %s; this needs %s more; "+
				"it runs as the namespace's running work there ends", ns.name, strings.Join(full, "; "), needWords(c, cost))}
		return nil, s.nsHolders(c, w), false
	}
	if g := c.guarOn(); g != "" {
		if i := slices.Index(on, g); i > 0 {
			copy(on[1:i+1], on[:i])
			on[0] = g
		}
	}
	return on, queue.Wait{}, true
}

// targets are the clusters where freeing resources may serve c, which waits within its
// namespace's guarantee (preempt.go): the cluster whose guarantee it is within, else
// those it may be placed on now; nil with no cluster in the view (anywhere).
func (s *spaces) targets(c *cand) (use []string, spread bool) {
	if s.policyOf == nil {
		return nil, false
	}
	p := s.policyOf(c)
	switch {
	case c.guarOn() != "":
		return []string{c.guarOn()}, false
	case c.on() != nil:
		return c.on(), p.spread
	}
	return p.use, p.spread
}

// usable is the part of the empty cluster c may use (all of it with no cluster in the
// view), so that never_fits and the reservation look only where c could run.
func (d *decider) usable(c *cand) emptyCluster {
	if c.sh.clusters == noPolicy {
		return d.cluster
	}
	return d.partsOf(c).usable
}

// split is the empty cluster split by cluster, each part in cl's order, in one array.
func (cl emptyCluster) split() map[string]emptyCluster {
	count := map[string]int{}
	for _, a := range cl {
		count[a.Cluster]++
	}
	all := make(emptyCluster, len(cl))
	out := make(map[string]emptyCluster, len(count))
	at := 0
	for _, a := range cl { // each cluster's part where its first agent comes
		if _, ok := out[a.Cluster]; !ok {
			n := count[a.Cluster]
			out[a.Cluster] = all[at : at : at+n]
			at += n
		}
		out[a.Cluster] = append(out[a.Cluster], a)
	}
	return out
}

// clustersPresent are the clusters with an agent or an offer in the view.
func clustersPresent(cl emptyCluster) map[string]bool {
	out := map[string]bool{}
	for _, a := range cl {
		out[a.Cluster] = true
	}
	return out
}
