package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine"
)

// nodeOffer is the offer state of one node: Mesos' semantics over a node's free resources.
// A node is offered while it has room and the scheduler has not suppressed offers; an
// offer it declines (or the rest of one it accepted) comes back when the node's free
// resources change or its refuse time has passed; an offer whose node changed is rescinded
// and made again.
//
// A node's free room changes whenever a pod on it ends or starts, many times a second on a
// busy cluster, and each change rescinds its offer and makes another: a round that decided
// on the offer before its rescission reached the scheduler would have its ACCEPT refused and
// its launches wait for the next round. So the node keeps its superseded offers (rescinded
// while it stayed usable, neither accepted nor declined since), and an ACCEPT of one is
// taken while the node is there, usable, and its room now holds the launches (claim).
type nodeOffer struct {
	id           string // the outstanding offer ("": none)
	free         res    // what it offered
	superseded   []offerView
	refusedUntil time.Time
	refusedFree  res // free when refused: a change makes a new offer at once
}

// offerView is an offer as the scheduler was told it: its id and the free room it showed.
type offerView struct {
	id   string
	free res
}

// maxSuperseded bounds a node's superseded offers kept (the newest): a round's ACCEPTs go
// within a few seconds of its view (its decision, then the creates of the ACCEPTs before
// them at the client's rate), while a busy node's room changes a few times a second.
const maxSuperseded = 32

// offerBook is the nodes' offers: which is outstanding, refused until when, and whether
// offers are suppressed. It is the launch decisions' state, read in one step with the nodes
// and the tasks they are offered from, so it is guarded by the Engine's lock.
type offerBook struct {
	prefix     string // in every offer id, new with each engine
	byNode     map[string]*nodeOffer
	seq        int
	suppressed bool
}

// minOffer is the least a node must have free to be offered.
var minOffer = res{cpus: 0.001, mem: 1}

// frees reads the pods and tasks once and returns freeOf for every node: a round over all
// nodes costs one pass over the pods, not one per node (at 1,000 nodes the per-node passes
// were most of the scheduler's CPU, docs/benchmarks.md), and the pass sums into one value
// per node (no list per node to allocate at every step). Called with e.mu held; the
// returned func is valid until e.mu is released.
func (e *Engine) frees() func(n *nodeInfo) res { return freesOf(e.nodes, e.usage, e.tasks) }

// freesOf is frees over the given nodes, pods and tasks (pure).
func freesOf(nodes map[string]*nodeInfo, usage map[string]podUsage, tasks taskTable) func(n *nodeInfo) res {
	free := make(map[string]res, len(nodes))
	take := func(node string, r res) {
		f, ok := free[node]
		if !ok {
			n := nodes[node]
			if n == nil {
				return
			}
			f = n.allocatable
		}
		free[node] = f.sub(r)
	}
	for _, u := range usage {
		take(u.node, u.req)
	}
	for _, t := range tasks {
		if t.created {
			take(t.node, t.req)
		}
	}
	return func(n *nodeInfo) res {
		f, ok := free[n.name]
		if !ok {
			f = n.allocatable
		}
		return res{cpus: math.Floor(f.cpus*1000+1e-6) / 1000, mem: math.Floor(f.mem + 1e-6)}
	}
}

// freeOn is frees for one node, by a pass that builds nothing: what an ACCEPT checks and
// refuses its node's offer at (frees' map of every node would cost an ACCEPT several times
// as much at 1,000 nodes). Called with e.mu held.
func (e *Engine) freeOn(n *nodeInfo) res {
	f := n.allocatable
	for _, u := range e.usage {
		if u.node == n.name {
			f = f.sub(u.req)
		}
	}
	for _, t := range e.tasks {
		if t.created && t.node == n.name {
			f = f.sub(t.req)
		}
	}
	return res{cpus: math.Floor(f.cpus*1000+1e-6) / 1000, mem: math.Floor(f.mem + 1e-6)}
}

// nodeNames is the nodes' names in order, sorted again only when a node came or went (a
// step runs at every pod event). Called with e.mu held.
func (e *Engine) nodeNames() []string {
	if e.names == nil {
		e.names = make([]string, 0, len(e.nodes))
		for name := range e.nodes {
			e.names = append(e.names, name)
		}
		sort.Strings(e.names)
	}
	return e.names
}

// reoffer brings the offers up to date with the nodes (names: theirs, sorted; freeOf:
// Engine.frees).
func (e *offerBook) reoffer(now time.Time, nodes map[string]*nodeInfo, names []string, freeOf func(*nodeInfo) res) (calls []call, next time.Time) {
	var made []engine.Offer
	for name, o := range e.byNode { // nodes gone: their offers too
		if _, ok := nodes[name]; !ok {
			calls = append(calls, o.rescind()...)
			delete(e.byNode, name)
		}
	}
	for _, name := range names {
		n := nodes[name]
		o := e.byNode[name]
		if o == nil {
			o = &nodeOffer{}
			e.byNode[name] = o
		}
		free := freeOf(n)
		if o.id != "" && (!n.usable || free != o.free) {
			if n.usable {
				o.supersede()
			}
			calls = append(calls, o.rescind()...)
		}
		if !n.usable { // an offer of a node that cannot take pods now is void, whenever made
			o.superseded = nil
		}
		if o.id != "" || !n.usable || e.suppressed || free.cpus < minOffer.cpus || free.mem < minOffer.mem {
			continue
		}
		if now.Before(o.refusedUntil) && free == o.refusedFree {
			if next.IsZero() || o.refusedUntil.Before(next) {
				next = o.refusedUntil
			}
			continue
		}
		e.seq++
		o.id, o.free = fmt.Sprintf("%s-%s-O%d", name, e.prefix, e.seq), free
		made = append(made, engine.Offer{ID: o.id, AgentID: name, Hostname: name, CPUs: free.cpus, MemMB: free.mem})
	}
	if len(made) > 0 {
		calls = append(calls, func(ctx context.Context, h engine.Handler) { h.Offers(ctx, made) })
	}
	return calls, next
}

// rescind ends the outstanding offer, if any, and returns the call that tells it.
func (o *nodeOffer) rescind() []call {
	id := o.id
	o.id = ""
	if id == "" {
		return nil
	}
	return []call{func(ctx context.Context, h engine.Handler) { h.Rescinded(ctx, id) }}
}

// supersede keeps the outstanding offer among the node's superseded ones.
func (o *nodeOffer) supersede() {
	if o.id == "" {
		return
	}
	if len(o.superseded) == maxSuperseded {
		o.superseded = append(o.superseded[:0], o.superseded[1:]...)
	}
	o.superseded = append(o.superseded, offerView{o.id, o.free})
}

// forget drops a superseded offer (accepted or declined: not to be taken again).
func (o *nodeOffer) forget(id string) {
	for i, v := range o.superseded {
		if v.id == id {
			o.superseded = append(o.superseded[:i], o.superseded[i+1:]...)
			return
		}
	}
}

// nodeOf is the node named in an offer id, "<node>-<prefix>-O<seq>" (reoffer): one lookup,
// not a pass over every node for each offer a round declines.
func (e *offerBook) nodeOf(id string) (string, bool) {
	i := strings.LastIndex(id, "-"+e.prefix+"-O")
	if id == "" || i < 0 {
		return "", false
	}
	return id[:i], true
}

// lookup finds the node of an outstanding offer from its id.
func (e *offerBook) lookup(id string) (string, *nodeOffer, bool) {
	name, ok := e.nodeOf(id)
	if !ok {
		return "", nil, false
	}
	if o := e.byNode[name]; o != nil && o.id == id {
		return name, o, true
	}
	return "", nil, false
}

// find finds the node of an offer that may be accepted, outstanding (cur) or superseded,
// and the free room it showed.
func (e *offerBook) find(id string) (name string, o *nodeOffer, free res, cur, ok bool) {
	name, ok = e.nodeOf(id)
	if o = e.byNode[name]; !ok || o == nil {
		return name, nil, res{}, false, false
	}
	if o.id == id {
		return name, o, o.free, true, true
	}
	for _, v := range o.superseded {
		if v.id == id {
			return name, o, v.free, false, true
		}
	}
	return name, nil, res{}, false, false
}

// refuse ends an offer; its node n (nil: gone) comes back after refuse (< 0: at once,
// counted from now) or when its free resources change, as freeOf (Engine.frees) says.
func (o *nodeOffer) refuse(n *nodeInfo, refuse time.Duration, now time.Time, freeOf func(*nodeInfo) res) {
	o.id = ""
	if n == nil {
		return
	}
	o.refusedFree = freeOf(n)
	o.refusedUntil = time.Time{}
	if refuse > 0 {
		o.refusedUntil = now.Add(refuse)
	}
}

// revive ends the refusals and the suppression.
func (e *offerBook) revive() {
	e.suppressed = false
	for _, o := range e.byNode {
		o.refusedUntil = time.Time{}
	}
}

// ErrStaleOffer is returned by Accept for an offer the engine made whose node can no longer
// take the launches: the node left the cluster or cannot take pods now (cordoned, not
// Ready, …), or its free room shrank below what the launches ask since the offer.
var ErrStaleOffer = errors.New("kube: stale offer")

// claim is the offers of one ACCEPT as found: their node, and each offer outstanding or
// superseded with the room it showed.
type claim struct {
	ids  []string
	node string
	o    *nodeOffer
	cur  map[string]bool // the outstanding offer among ids, if any
	seen res             // the room the offers showed, summed
}

// claim finds the offers of an ACCEPT, all of one node that is there and can take pods.
// Called with e.mu held.
func (e *Engine) claim(ids []string) (*claim, error) {
	if len(ids) == 0 {
		return nil, errors.New("kube: accept without an offer")
	}
	c := &claim{ids: ids, cur: map[string]bool{}}
	for _, id := range ids {
		name, o, free, cur, ok := e.offers.find(id)
		if name != "" && e.nodes[name] == nil {
			return nil, fmt.Errorf("%w: %s: node %s left the cluster", ErrStaleOffer, id, name)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s (not made by this engine, or used, declined or voided since)", ErrUnknownOffer, id)
		}
		if c.node != "" && name != c.node {
			return nil, fmt.Errorf("kube: accept of offers of nodes %s and %s: an ACCEPT places pods on one node", c.node, name)
		}
		if n := e.nodes[name]; !n.usable {
			return nil, fmt.Errorf("%w: %s: node %s cannot take pods now: %s", ErrStaleOffer, id, name, n.why)
		}
		c.node, c.o, c.seen = name, o, c.seen.add(free)
		if cur {
			c.cur[id] = true
		}
	}
	return c, nil
}

// fits reports whether the node's room now holds pods asking need: it has not shrunk below
// what the offers showed (the round decided on that room), or it holds need itself.
// Called with e.mu held.
func (e *Engine) fits(c *claim, need res) error {
	free := e.freeOn(e.nodes[c.node])
	const slack = 1e-6
	if free.cpus+slack >= c.seen.cpus && free.mem+slack >= c.seen.mem {
		return nil
	}
	if free.cpus+slack >= need.cpus && free.mem+slack >= need.mem {
		return nil
	}
	return fmt.Errorf("%w: %s: node %s has %g cpus and %g MB free now, less than the launches' %g cpus and %g MB (its room shrank since the offer)",
		ErrStaleOffer, strings.Join(c.ids, ","), c.node, free.cpus, free.mem, need.cpus, need.mem)
}

// void ends the outstanding offers among ids after a refused ACCEPT (the scheduler forgot
// them when it sent the ACCEPT, and would hold none of the node's): their nodes are offered
// again at the next step. Superseded offers stay. Called with e.mu held.
func (e *Engine) void(ids []string) {
	for _, id := range ids {
		if name, o, ok := e.offers.lookup(id); ok {
			o.refuse(e.nodes[name], -1, e.clock.Now(), e.freeOn)
		}
	}
}

// take uses the claim's offers once its pods count against the node: an outstanding one
// is refused as a used offer is; a superseded one is forgotten, and the node's outstanding
// offer, if another, is rescinded (its room is taken) and kept as superseded (a round may
// have decided on it meanwhile). Called with e.mu held.
func (e *Engine) take(c *claim, refuse time.Duration) {
	for _, id := range c.ids {
		c.o.forget(id)
	}
	if c.o.id != "" && !c.cur[c.o.id] {
		c.o.supersede()
		for _, call := range c.o.rescind() {
			e.post(call)
		}
	}
	c.o.refuse(e.nodes[c.node], refuse, e.clock.Now(), e.freeOn)
}
