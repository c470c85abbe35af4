package round

import (
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
)

// A round with a backlog decides over the queues' head first. The round
// takes one namespace's entries in their order (failover shards, then
// ready executions, oldest first) and stops at View.MaxTasks; every
// entry after the stop waits behind older work (or never fits), whatever
// the others are. So when one namespace is in play and the round stopped
// within the head, the head's plan is the whole round's: its launches,
// offers to decline, reservation and the head's reasons are those the
// whole backlog would give. Only the rest's reasons (and what they add:
// stale entries, wake-ups, the depth) remain, one entry at a time, and the
// launcher works them out after its launches are sent (Rest.Finish). With
// several namespaces, or capacities, borrowers are ordered by their share
// and a namespace's first entry may lie anywhere in the backlog: the
// round is decided over the whole backlog at once, as before.

// headFactor and headMin size the head: the failover shards and the
// first max(headFactor × MaxTasks, headMin) ready entries (tests set them
// lower).
var headFactor, headMin = 4, 256

// Rest is what a round decided over its head leaves: the reasons of the
// ready entries after it. nil: nothing is left.
type Rest struct {
	d    *decider
	from int // the first ready entry of the rest
}

// Begin decides a round over its head (above): the plan's launches,
// declines, reservation, More and Chunked are final, and with a non-nil
// Rest the plan's Waiting, Drop, Remove, WakeAt, Depth, Busy and Idle
// are finished by Rest.Finish (Busy stays true and Idle false when the
// plan launches and More is set). Decide is Begin then Finish.
func Begin(v View) (Plan, *Rest) {
	waiting := v.Scratch
	if waiting == nil {
		waiting = make(map[string]queue.Wait, len(v.Ready)+len(v.Failover))
	}
	if n := headLen(v); n < len(v.Ready) && oneNamespace(v) {
		clear(waiting)
		d := &decider{v: v, plan: Plan{Waiting: waiting}}
		d.classify(n)
		d.place()
		if d.settled() {
			return d.plan, &Rest{d: d, from: n}
		}
	}
	clear(waiting)
	d := &decider{v: v, plan: Plan{Waiting: waiting}}
	d.classify(len(v.Ready))
	switch {
	case !v.Connected:
		d.waitAll(queue.WaitNotSubscribed, "the scheduler is not subscribed to its cluster engine at the moment (it re-subscribes with backoff)")
	case !v.Unavailable.IsZero():
		for _, c := range d.cands {
			d.waitUntil(c.key, queue.WaitUnavailable, "the cluster engine could not be reached at the last launch; launches wait until "+
				fmtUntil(v.Unavailable), v.Unavailable)
		}
	default:
		d.place()
	}
	return d.plan, nil
}

// headLen is how many ready entries a round decides over first: all of
// them when it is not bounded, not subscribed or the engine unavailable
// (every entry gets the same reason) or holds no offer (it places nothing, so it never stops).
func headLen(v View) int {
	if v.MaxTasks <= 0 || !v.Connected || !v.Unavailable.IsZero() || len(v.Offers) == 0 {
		return len(v.Ready)
	}
	return max(headFactor*v.MaxTasks, headMin)
}

// oneNamespace reports whether the round's work is of one namespace
// with no capacity: its queues' entries, its running jobs, the apps of
// its executors and the namespaces the view lists (a look at names only).
func oneNamespace(v View) bool {
	only := ""
	same := func(ns string) bool {
		if only == "" {
			only = ns
		}
		return ns == only
	}
	for name, c := range v.Namespaces {
		if !c.isZero() || !same(name) {
			return false
		}
	}
	for _, rd := range v.Ready {
		if !same(namespace.Of(rd.Job)) {
			return false
		}
	}
	for i := range v.Failover {
		if !same(namespace.Of(v.Failover[i].Job)) {
			return false
		}
	}
	for job := range v.Running {
		if !same(namespace.Of(job)) {
			return false
		}
	}
	for k := range v.Executors {
		if owner, ok := execOwner(k.App); ok && !same(owner) {
			return false
		}
	}
	return true
}

// settled reports whether the round over the head is the whole
// backlog's: one namespace is in play (oneNamespace) and the round
// stopped at its bound within the head.
func (d *decider) settled() bool {
	return d.stopped && !d.ns.multi && len(d.ns.byName) == 1
}

// Finish gives the rest's entries their reasons in p (Begin's plan), as
// the round over the whole backlog does after its stop: each candidate
// waits behind older work (or never fits), every other entry has its
// reason from the queues. A nil Rest has nothing to finish.
func (r *Rest) Finish(p *Plan) {
	if r == nil || r.d == nil {
		return
	}
	d := r.d
	d.plan = *p
	for _, rd := range d.v.Ready[r.from:] {
		c, ok := d.classifyReady(rd)
		if !ok {
			continue
		}
		if w := d.neverFits(&c); w != nil {
			d.plan.Waiting[c.key] = *w
			continue
		}
		d.busy++
		d.plan.More = true
		d.wait(c.key, queue.WaitBehind, d.capped)
	}
	if d.plan.More && len(d.plan.Launches) > 0 {
		d.plan.Decline = nil // as finish: the next round uses them
	}
	d.plan.Busy, d.plan.Idle = len(d.launched) < d.busy, d.busy == 0
	*p = d.plan
	r.d = nil // finished once
}
