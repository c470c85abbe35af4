package embedded

import (
	"fmt"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// defaultRefuse is the Mesos default of Filters.refuse_seconds.
const defaultRefuse = 5 * time.Second

// allocator is the master's offers side: the outstanding offers, the
// agents queued for allocation and the batching of allocations. Decline
// filters live on each framework; the frameworks and agents it offers to
// are the master's (m). The decisions are pure functions (allocation.go).
// Cluster.mu guards it with the rest of the master.
type allocator struct {
	m        *master
	offers   map[string]*offer
	dirty    []*agent // agents to allocate (touch)
	allDirty bool     // every agent is to be allocated (touchAll)
	batching bool     // allocation deferred to the end of a batch (allocateAfter)
}

// offer is an outstanding offer of one agent's resources; they are kept
// unallocated.
type offer struct {
	id        string
	fw        *framework
	agent     *agent
	resources mesos.Resources
}

// filter hides resources ⊆ resources of one agent from a framework until
// it expires.
type filter struct {
	agent     *agent
	resources mesos.Resources
	timer     *time.Timer
}

// allocate offers the free pool of every agent queued by touch (every
// agent after touchAll) to the connected, unsuppressed frameworks without
// an outstanding offer on that agent, in framework id order, skipping
// those whose decline filters on the agent cover its pool. Each framework
// gets its new offers in one OFFERS event. Called on every change that may
// free resources or make a framework eligible; inside a batch
// (allocateAfter) it waits for the batch to end.
func (al *allocator) allocate() {
	if al.m.closing || al.batching {
		return
	}
	agents := al.takeDirty()
	if len(agents) == 0 {
		return
	}
	fws := eligibleFrameworks(al.m.frameworks)
	if len(fws) == 0 {
		return
	}
	made := map[*framework][]mesos.Offer{}
	for _, g := range planOffers(agents, fws) {
		made[g.fw] = append(made[g.fw], al.makeOffer(g.fw, g.agent, g.agent.free))
	}
	for _, fw := range fws {
		if len(made[fw]) > 0 {
			fw.send(&scheduler.Event{Type: scheduler.Event_OFFERS, Offers: &scheduler.Event_Offers{Offers: made[fw]}})
		}
	}
}

// allocateAfter runs f (with c.mu held) and allocates once at its end, so
// that the changes f makes on many agents yield one OFFERS event per
// framework instead of one per change.
func (al *allocator) allocateAfter(f func()) {
	if al.batching {
		f()
		return
	}
	al.batching = true
	defer func() {
		al.batching = false
		al.allocate()
	}()
	f()
}

// makeOffer offers a's whole free pool to fw (the offer takes the pool
// over) and returns the offer as sent.
func (al *allocator) makeOffer(fw *framework, a *agent, free mesos.Resources) mesos.Offer {
	o := &offer{id: fmt.Sprintf("%s-O%d", al.m.masterID, al.m.nextID()), fw: fw, agent: a, resources: free}
	a.free = nil
	al.offers[o.id] = o
	fw.offers[a.id] = o
	return offerFor(o.id, fw, a, free, al.m.agentURL(a))
}

// removeOffer drops an outstanding offer, sending RESCIND when asked to
// and the framework is connected; its agent is queued for allocation.
func (al *allocator) removeOffer(o *offer, rescind bool) {
	fw := o.fw
	delete(al.offers, o.id)
	if fw.offers[o.agent.id] == o {
		delete(fw.offers, o.agent.id)
	}
	if len(o.agent.free) == 0 { // the usual case: the offer held the whole pool
		o.agent.free = cloneResources(o.resources) // a copy: o.resources may live on in a filter
	} else {
		o.agent.free.Add(o.resources...)
	}
	al.touch(o.agent)
	if rescind {
		fw.send(&scheduler.Event{Type: scheduler.Event_RESCIND, Rescind: &scheduler.Event_Rescind{OfferID: mesos.OfferID{Value: o.id}}})
	}
}

// removeOffers drops every outstanding offer of fw.
func (al *allocator) removeOffers(fw *framework, rescind bool) {
	for _, o := range fw.offers {
		al.removeOffer(o, rescind)
	}
}

// takeOffer removes and returns a valid outstanding offer of fw.
func (al *allocator) takeOffer(fw *framework, id string) (*offer, error) {
	o := al.offers[id]
	if o == nil || o.fw != fw {
		return nil, fmt.Errorf("Offer %s is no longer valid", id)
	}
	al.removeOffer(o, false)
	return o, nil
}

// addFilter refuses resources of a to fw for the filters' refuse_seconds.
func (al *allocator) addFilter(fw *framework, a *agent, rs mesos.Resources, filters *mesos.Filters) {
	d := refuseFor(filters)
	if d <= 0 || len(rs) == 0 {
		return
	}
	f := &filter{agent: a, resources: rs}
	f.timer = time.AfterFunc(d, func() { al.expireFilter(fw, f) })
	fw.filters[a.id] = append(fw.filters[a.id], f)
}

func (al *allocator) expireFilter(fw *framework, f *filter) {
	al.m.lock.Lock()
	defer al.m.lock.Unlock()
	list := fw.filters[f.agent.id]
	for i, g := range list {
		if g == f {
			if len(list) == 1 {
				delete(fw.filters, f.agent.id)
			} else {
				fw.filters[f.agent.id] = append(list[:i:i], list[i+1:]...)
			}
			al.touch(f.agent)
			al.allocate()
			return
		}
	}
}

func (al *allocator) clearFilters(fw *framework) {
	for _, list := range fw.filters {
		for _, f := range list {
			f.timer.Stop()
		}
	}
	fw.filters = map[string][]*filter{}
}

func (al *allocator) decline(fw *framework, ids []mesos.OfferID, filters *mesos.Filters) {
	for _, id := range ids {
		o, err := al.takeOffer(fw, id.Value)
		if err != nil {
			al.m.log.Debug("decline of unknown offer", "framework_id", fw.id, "offer_id", id.Value)
			continue
		}
		al.addFilter(fw, o.agent, o.resources, filters)
	}
	al.allocate()
}

func (al *allocator) suppress(fw *framework) {
	fw.suppressed = true
}

func (al *allocator) revive(fw *framework) {
	fw.suppressed = false
	al.clearFilters(fw)
	al.touchAll()
	al.allocate()
}
