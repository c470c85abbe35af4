package round

import (
	"container/heap"

	"github.com/ejcloud/elasticjob/offers"
)

// The round's order among namespaces: entries within their namespace's
// guarantee first, then the borrowers by weighted dominant share (the
// package documentation has the policy).

// rekey finds a namespace's next entry and sets its place in the order:
// in the first pass the next entry that fits what is left of its
// guarantee (those that do not are kept for the second); then the next
// of the rest. It reports false when none is left.
func (s *spaces) rekey(ns *nsState) bool {
	if !ns.anyGuarantee() && ns.lhead == 0 && len(ns.later) == 0 && ns.head == 0 {
		ns.later, ns.queue = ns.queue, nil // nothing is within a zero guarantee
	}
	for ns.head < len(ns.queue) {
		c := &s.cands[ns.queue[ns.head]]
		cost := s.cost(c)
		if ns.within(ns.rest().Add(cost)) {
			ns.headC, ns.class = c, classGuaranteed
			c.setGuarOn("")
			return true
		}
		if cl := s.guaranteedOn(ns, c, cost); cl != "" {
			ns.headC, ns.class = c, classGuaranteed
			c.setGuarOn(cl)
			return true
		}
		c.setGuarOn("")
		ns.later = append(ns.later, ns.queue[ns.head])
		ns.head++
	}
	if ns.lhead >= len(ns.later) {
		return false
	}
	ns.headC, ns.class = &s.cands[ns.later[ns.lhead]], classBorrowing
	ns.share = dominantShare(ns.borrowed(), s.total) / ns.cap.weight()
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
func (s *spaces) next() *cand {
	if len(s.order) == 0 {
		return nil
	}
	ns := s.order[0]
	c := ns.headC
	c.class = ns.class
	if ns.class == classGuaranteed {
		ns.head++
	} else {
		ns.lhead++
	}
	s.refresh(ns)
	return c
}

// refresh moves a namespace in the order after its next entry or its
// usage changed.
func (s *spaces) refresh(ns *nsState) {
	if ns.idx < 0 {
		return // handed out already
	}
	if !s.rekey(ns) {
		heap.Remove(&s.order, ns.idx)
		ns.idx = -1
		return
	}
	heap.Fix(&s.order, ns.idx)
}

// rest hands out the entries the order has not reached, in no particular
// order (the round stopped at its bound).
func (s *spaces) rest(f func(c *cand)) {
	order := s.order
	s.order = nil
	for _, ns := range order {
		ns.idx = -1
		for _, list := range [][]int32{ns.queue[min(ns.head, len(ns.queue)):], ns.later[ns.lhead:]} {
			for _, i := range list {
				f(&s.cands[i])
			}
		}
		ns.head, ns.lhead = len(ns.queue), len(ns.later)
	}
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
