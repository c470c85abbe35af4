package round

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// emptyCluster is the empty cluster: every agent's total, largest first
// (then by id). Whether work could ever fit is judged against it
// (never_fits), and the reservation holds on it.
type emptyCluster []Agent

// clusterOf is the empty cluster: each agent's total from the engine's
// inventory, or what its offers have free when that is more (an agent the
// inventory does not list yet, or lists short).
func clusterOf(agents []Agent, offs []offers.Offer) emptyCluster {
	// One entry per agent id, found by its index (no map per attribute): its cluster is the
	// last one named, an offer's over an agent's.
	at := make(map[string]int, len(agents))
	out := make(emptyCluster, 0, len(agents))
	index := func(id string) int {
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, Agent{ID: id})
		}
		return i
	}
	for _, a := range agents {
		i := index(a.ID)
		out[i].Total = maxRes(out[i].Total, a.Total)
		if a.Cluster != "" {
			out[i].Cluster = a.Cluster
		}
	}
	offered := make([]offers.Resources, len(out))
	hasOffer := make([]bool, len(out))
	for _, o := range offs {
		i := index(o.AgentID)
		for len(offered) < len(out) {
			offered, hasOffer = append(offered, offers.Resources{}), append(hasOffer, false)
		}
		offered[i], hasOffer[i] = offered[i].Add(o.Free), true
		if o.Cluster != "" {
			out[i].Cluster = o.Cluster
		}
	}
	for i, ok := range hasOffer {
		if ok {
			out[i].Total = maxRes(out[i].Total, offered[i])
		}
	}
	// largest first (then by id): the fewest agents an execution needs
	slices.SortFunc(out, func(a, b Agent) int {
		return cmp.Or(cmp.Compare(b.Total.CPU, a.Total.CPU), cmp.Compare(b.Total.MemMB, a.Total.MemMB), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func maxRes(a, b offers.Resources) offers.Resources {
	return offers.Resources{CPU: max(a.CPU, b.CPU), MemMB: max(a.MemMB, b.MemMB)}
}

// fitCount is how many shards of size t fit in total, with the executor
// e charged once when at least one does; at most limit.
func fitCount(total, t, e offers.Resources, limit int) int {
	if !t.Add(e).Fits(total) {
		return 0
	}
	rest := total.Sub(e)
	n := limit
	if t.CPU > 0 {
		n = min(n, int(rest.CPU/t.CPU))
	}
	if t.MemMB > 0 {
		n = min(n, int(rest.MemMB/t.MemMB))
	}
	return max(n, 0)
}

// spread is how an execution of n shards would sit on the empty cluster,
// largest agents first: how many agents it needs, and how many shards fit
// in all (n when it fits).
func spread(cluster []Agent, n int, t, e offers.Resources) (agents, fits int) {
	for _, a := range cluster {
		if fits >= n {
			break
		}
		if k := fitCount(a.Total, t, e, n-fits); k > 0 {
			fits += k
			agents++
		}
	}
	return agents, fits
}

// neverFits returns the wait of an entry that could not fit even the
// whole empty cluster (nil: it could). Entries of one shape share it.
func (d *decider) neverFits(c *cand) *queue.Wait {
	if len(d.cluster) == 0 {
		return nil // no agent known: nothing to compare with
	}
	sh := c.shape()
	k := neverKey{n: sh.n, task: sh.task, exec: sh.exec, clusters: sh.clusters}
	if w, ok := d.never[k]; ok {
		return w
	}
	if d.never == nil {
		d.never = map[neverKey]*queue.Wait{}
	}
	var w *queue.Wait
	if cl, fits := d.fitsSomewhere(c); !fits {
		w = &queue.Wait{Reason: queue.WaitTooLarge, Message: cl.neverMessage(sh)}
	}
	d.never[k] = w
	return w
}

// neverKey is what never_fits depends on: work's size and where it may run, not its app
// or kind. Keyed on those alone, a backlog of many apps asks far fewer times, and the
// memo's keys are half a shape's size (no app name).
type neverKey struct {
	n          int
	task, exec offers.Resources
	clusters   policyID
}

// fitsSomewhere reports whether c fits the empty cluster it may use: with clusters in the
// view, all its shards on one of them (or over them all, when it may spread). Not, it
// returns the agents it was judged against (the largest cluster it may use).
func (d *decider) fitsSomewhere(c *cand) (emptyCluster, bool) { return d.fitsWhere(c, c.shape()) }

func (d *decider) fitsWhere(c *cand, sh shape) (emptyCluster, bool) {
	if sh.clusters == noPolicy {
		_, fits := spread(d.cluster, sh.n, sh.task, sh.exec)
		return d.cluster, fits >= sh.n
	}
	pp := d.partsOf(c)
	if pp.p.spread {
		_, fits := spread(pp.usable, sh.n, sh.task, sh.exec)
		return pp.usable, fits >= sh.n
	}
	var largest emptyCluster
	for _, part := range pp.parts {
		if _, fits := spread(part, sh.n, sh.task, sh.exec); fits >= sh.n {
			return part, true
		}
		if len(part) > len(largest) {
			largest = part
		}
	}
	return largest, false
}

// reservable are the agents c's reservation holds on: those it may use, and, when its
// shards run on one cluster, those of the first cluster it fits when empty (the
// reservation waits for room there, not on every cluster at once).
func (d *decider) reservable(c *cand) emptyCluster {
	if c.sh.clusters == noPolicy || d.policyOf(c).spread {
		return d.usable(c)
	}
	if part, ok := d.fitsSomewhere(c); ok {
		return part
	}
	return nil
}

// neverMessage words why work of shape sh never fits the cluster.
func (cl emptyCluster) neverMessage(sh shape) string {
	var all offers.Resources
	for _, a := range cl {
		all = all.Add(a.Total)
	}
	name := "the cluster"
	if len(cl) > 0 && cl[0].Cluster != "" && !slices.ContainsFunc(cl, func(a Agent) bool { return a.Cluster != cl[0].Cluster }) {
		name = "cluster " + cl[0].Cluster
	}
	where := fmt.Sprintf("%s has %s on %d agents", name, fmtRes(all), len(cl))
	if len(cl) == 1 {
		where = name + " has " + fmtRes(all) + " on its one agent"
	}
	if _, fits := spread(cl, 1, sh.task, sh.exec); fits == 0 {
		return fmt.Sprintf("can never fit: a shard needs %s (%s for the shard, %s for the app's executor beside it), more than any agent has; %s%s",
			fmtRes(sh.task.Add(sh.exec)), fmtRes(sh.task), fmtRes(sh.exec), where, cl.largest())
	}
	return fmt.Sprintf("can never fit: it needs %s; %s", need(cl, sh, true), where)
}

// largest names the largest agents (by CPU, at most three).
func (cl emptyCluster) largest() string {
	if len(cl) < 2 {
		return ""
	}
	var names []string
	for _, a := range cl[:min(3, len(cl))] {
		names = append(names, fmtRes(a.Total))
	}
	return " (the largest: " + strings.Join(names, "; ") + ")"
}

// need words what an execution needs in all. On the empty cluster
// (empty) the executor's share is counted on every agent it would use:
// "2.1 CPUs and 192 MB: 2 CPUs and 128 MB for the 2 shards, 0.1 CPUs and
// 64 MB for the app's executor on the agent it needs"; otherwise the
// executor is named without a total (it may run on some agents already).
func need(cluster []Agent, sh shape, empty bool) string {
	shards := offers.Resources{CPU: sh.task.CPU * offers.Milli(sh.n), MemMB: sh.task.MemMB * int64(sh.n)}
	if sh.exec.IsZero() {
		return fmt.Sprintf("%s for its %s", fmtRes(shards), plural(sh.n, "shard"))
	}
	if !empty {
		return fmt.Sprintf("%s for the %s, plus %s for the app's executor on each agent it uses where the executor does not run yet",
			fmtRes(shards), plural(sh.n, "shard"), fmtRes(sh.exec))
	}
	agents, _ := spread(cluster, sh.n, sh.task, sh.exec)
	agents = max(agents, 1) // at least one executor, whatever the shards' spread
	execs := offers.Resources{CPU: sh.exec.CPU * offers.Milli(agents), MemMB: sh.exec.MemMB * int64(agents)}
	on := "on the agent it needs"
	if agents > 1 {
		on = fmt.Sprintf("on each of the %d agents it needs", agents)
	}
	return fmt.Sprintf("%s: %s for the %s, %s for the app's executor %s",
		fmtRes(shards.Add(execs)), fmtRes(shards), plural(sh.n, "shard"), fmtRes(sh.exec), on)
}

// reserve makes c the reservation's holder: on every agent that could
// take some of its shards, the resources on offer up to what it could use
// there are held for it. It returns c's wait.
func (d *decider) reserve(c *cand, m *offers.Matcher, w queue.Wait) queue.Wait {
	sh := c.shape()
	var held offers.Resources
	for _, a := range d.reservable(c) {
		e := sh.exec
		if m.Present(sh.app, a.ID) {
			e = offers.Resources{}
		}
		k := fitCount(a.Total, sh.task, e, sh.n)
		if k == 0 {
			continue
		}
		use := offers.Resources{CPU: sh.task.CPU*offers.Milli(k) + e.CPU, MemMB: sh.task.MemMB*int64(k) + e.MemMB}
		held = held.Add(m.Hold(a.ID, use))
	}
	r := Reservation{Key: c.key, Since: d.v.Now, Held: held,
		Need: offers.Resources{CPU: sh.task.CPU * offers.Milli(sh.n), MemMB: sh.task.MemMB * int64(sh.n)}}
	if prev := d.v.Reservation; prev.Key == c.key && !prev.Since.IsZero() {
		r.Since = prev.Since
	}
	d.plan.Reservation = r
	return queue.Wait{Reason: queue.WaitReserved, Message: fmt.Sprintf("the oldest work that does not fit now, so it holds a reservation (since %s): "+
		"what frees up on the agents it can use goes to it first (%s held this round), later work uses only the rest; %s",
		fmtUntil(r.Since), fmtRes(held), w.Message), Needs: w.Needs, Holders: w.Holders}
}

func fmtRes(r offers.Resources) string {
	unit := "CPUs"
	if r.CPU == 1000 {
		unit = "CPU"
	}
	return fmt.Sprintf("%s %s and %d MB", fmtCPU(r.CPU), unit, r.MemMB)
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
