package embedded

import (
	"fmt"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// defaultRefuse is the Mesos default of Filters.refuse_seconds.
const defaultRefuse = 5 * time.Second

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
func (m *master) allocate() {
	if m.closing || m.batching {
		return
	}
	agents := m.takeDirty()
	if len(agents) == 0 {
		return
	}
	fws := eligibleFrameworks(m.frameworks)
	if len(fws) == 0 {
		return
	}
	made := map[*framework][]mesos.Offer{}
	for _, g := range planOffers(agents, fws) {
		made[g.fw] = append(made[g.fw], m.makeOffer(g.fw, g.agent, g.agent.free))
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
func (m *master) allocateAfter(f func()) {
	if m.batching {
		f()
		return
	}
	m.batching = true
	defer func() {
		m.batching = false
		m.allocate()
	}()
	f()
}

// makeOffer offers a's whole free pool to fw (the offer takes the pool
// over) and returns the offer as sent.
func (m *master) makeOffer(fw *framework, a *agent, free mesos.Resources) mesos.Offer {
	o := &offer{id: fmt.Sprintf("%s-O%d", m.masterID, m.nextID()), fw: fw, agent: a, resources: free}
	a.free = nil
	m.offers[o.id] = o
	fw.offers[a.id] = o
	return offerFor(o.id, fw, a, free, m.agentURL(a))
}

// removeOffer drops an outstanding offer, sending RESCIND when asked to
// and the framework is connected; its agent is queued for allocation.
func (m *master) removeOffer(o *offer, rescind bool) {
	fw := o.fw
	delete(m.offers, o.id)
	if fw.offers[o.agent.id] == o {
		delete(fw.offers, o.agent.id)
	}
	if len(o.agent.free) == 0 { // the usual case: the offer held the whole pool
		o.agent.free = cloneResources(o.resources) // a copy: o.resources may live on in a filter
	} else {
		o.agent.free.Add(o.resources...)
	}
	m.touch(o.agent)
	if rescind {
		fw.send(&scheduler.Event{Type: scheduler.Event_RESCIND, Rescind: &scheduler.Event_Rescind{OfferID: mesos.OfferID{Value: o.id}}})
	}
}

// removeOffers drops every outstanding offer of fw.
func (m *master) removeOffers(fw *framework, rescind bool) {
	for _, o := range fw.offers {
		m.removeOffer(o, rescind)
	}
}

// takeOffer removes and returns a valid outstanding offer of fw.
func (m *master) takeOffer(fw *framework, id string) (*offer, error) {
	o := m.offers[id]
	if o == nil || o.fw != fw {
		return nil, fmt.Errorf("Offer %s is no longer valid", id)
	}
	m.removeOffer(o, false)
	return o, nil
}

// addFilter refuses resources of a to fw for the filters' refuse_seconds.
func (m *master) addFilter(fw *framework, a *agent, rs mesos.Resources, filters *mesos.Filters) {
	d := refuseFor(filters)
	if d <= 0 || len(rs) == 0 {
		return
	}
	f := &filter{agent: a, resources: rs}
	f.timer = time.AfterFunc(d, func() { m.expireFilter(fw, f) })
	fw.filters[a.id] = append(fw.filters[a.id], f)
}

func (m *master) expireFilter(fw *framework, f *filter) {
	m.lock.Lock()
	defer m.lock.Unlock()
	list := fw.filters[f.agent.id]
	for i, g := range list {
		if g == f {
			if len(list) == 1 {
				delete(fw.filters, f.agent.id)
			} else {
				fw.filters[f.agent.id] = append(list[:i:i], list[i+1:]...)
			}
			m.touch(f.agent)
			m.allocate()
			return
		}
	}
}

func (m *master) clearFilters(fw *framework) {
	for _, list := range fw.filters {
		for _, f := range list {
			f.timer.Stop()
		}
	}
	fw.filters = map[string][]*filter{}
}

func (m *master) decline(fw *framework, ids []mesos.OfferID, filters *mesos.Filters) {
	for _, id := range ids {
		o, err := m.takeOffer(fw, id.Value)
		if err != nil {
			m.log.Debug("decline of unknown offer", "framework_id", fw.id, "offer_id", id.Value)
			continue
		}
		m.addFilter(fw, o.agent, o.resources, filters)
	}
	m.allocate()
}

func (m *master) suppress(fw *framework) {
	fw.suppressed = true
}

func (m *master) revive(fw *framework) {
	fw.suppressed = false
	m.clearFilters(fw)
	m.touchAll()
	m.allocate()
}
