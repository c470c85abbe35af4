package kube

import (
	"context"
	"fmt"
	"math"
	"sort"
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

// minOffer is the least a node must have free to be offered.
var minOffer = res{cpus: 0.001, mem: 1}

// freeOf is a node's allocatable resources less the requests of every non-terminal pod bound
// to it (of any namespace) and of the pods this engine created that the informer has not
// shown yet. Called with e.mu held.
func (e *Engine) freeOf(n *nodeInfo) res {
	return e.frees()(n)
}

// frees reads the pods and tasks once and returns freeOf for every node: a round over all
// nodes costs one pass over the pods, not one per node (at 1,000 nodes the per-node passes
// were most of the scheduler's CPU, docs/benchmarks.md). Called with e.mu held; the returned
// func is valid until e.mu is released.
func (e *Engine) frees() func(n *nodeInfo) res {
	used := make(map[string][]res, len(e.nodes))
	for _, u := range e.usage {
		used[u.node] = append(used[u.node], u.req)
	}
	for _, t := range e.tasks {
		if t.created {
			used[t.node] = append(used[t.node], t.req)
		}
	}
	return func(n *nodeInfo) res {
		free := n.allocatable
		for _, r := range used[n.name] {
			free = free.sub(r)
		}
		return res{cpus: math.Floor(free.cpus*1000+1e-6) / 1000, mem: math.Floor(free.mem + 1e-6)}
	}
}

// reoffer brings the offers up to date with the nodes. Called with e.mu held.
func (e *Engine) reoffer(now time.Time) (calls []call, next time.Time) {
	var made []engine.Offer
	names := make([]string, 0, len(e.nodes))
	for name := range e.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	freeOf := e.frees()
	for name, o := range e.offers { // nodes gone: their offers too
		if _, ok := e.nodes[name]; !ok {
			calls = append(calls, e.rescind(o)...)
			delete(e.offers, name)
		}
	}
	for _, name := range names {
		n := e.nodes[name]
		o := e.offers[name]
		if o == nil {
			o = &nodeOffer{}
			e.offers[name] = o
		}
		free := freeOf(n)
		if o.id != "" && (!n.usable || free != o.free) {
			calls = append(calls, e.rescind(o)...)
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
		e.offerSeq++
		o.id, o.free = fmt.Sprintf("%s-%s-O%d", name, e.offerPrefix, e.offerSeq), free
		made = append(made, engine.Offer{ID: o.id, AgentID: name, Hostname: name, CPUs: free.cpus, MemMB: free.mem})
	}
	if len(made) > 0 {
		calls = append(calls, func(ctx context.Context, h engine.AsyncHandler) { h.Offers(ctx, made) })
	}
	return calls, next
}

func (e *Engine) rescind(o *nodeOffer) []call {
	id := o.id
	o.id = ""
	if id == "" {
		return nil
	}
	return []call{func(ctx context.Context, h engine.AsyncHandler) { h.Rescinded(ctx, id) }}
}

// offerOf finds the node of an outstanding offer. Called with e.mu held.
func (e *Engine) offerOf(id string) (string, *nodeOffer, bool) {
	for name, o := range e.offers {
		if o.id == id && id != "" {
			return name, o, true
		}
	}
	return "", nil, false
}

// refuse ends an offer; its node comes back after refuse (< 0: at once) or when its free
// resources change. Called with e.mu held.
func (e *Engine) refuse(name string, o *nodeOffer, refuse time.Duration) {
	o.id = ""
	n := e.nodes[name]
	if n == nil {
		return
	}
	o.refusedFree = e.freeOf(n)
	o.refusedUntil = time.Time{}
	if refuse > 0 {
		o.refusedUntil = e.clock.Now().Add(refuse)
	}
}
