package kube

import (
	"context"
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
type nodeOffer struct {
	id           string // the outstanding offer ("": none)
	free         res    // what it offered
	refusedUntil time.Time
	refusedFree  res // free when refused: a change makes a new offer at once
}

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
			calls = append(calls, o.rescind()...)
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

// offerOf finds the node of an outstanding offer from its id, "<node>-<prefix>-O<seq>"
// (reoffer): one lookup, not a pass over every node for each offer a round declines.
func (e *offerBook) lookup(id string) (string, *nodeOffer, bool) {
	i := strings.LastIndex(id, "-"+e.prefix+"-O")
	if id == "" || i < 0 {
		return "", nil, false
	}
	name := id[:i]
	if o := e.byNode[name]; o != nil && o.id == id {
		return name, o, true
	}
	return "", nil, false
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
