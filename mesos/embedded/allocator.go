package embedded

import (
	"fmt"
	"sort"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// defaultRefuse is the Mesos default of Filters.refuse_seconds.
const defaultRefuse = 5 * time.Second

// offer is an outstanding offer; resources are kept unallocated.
type offer struct {
	id        string
	fw        *framework
	resources mesos.Resources
}

// filter hides resources ⊆ resources from a framework until it expires.
type filter struct {
	resources mesos.Resources
	timer     *time.Timer
}

// used is everything held by tasks and executors.
func (c *Cluster) used() mesos.Resources {
	var used mesos.Resources
	for _, fw := range c.frameworks {
		for _, e := range fw.executors {
			if !e.released {
				used.Add(e.resources...)
			}
		}
		for _, t := range fw.tasks {
			if !t.released {
				used.Add(t.resources...)
			}
		}
	}
	return used
}

// available is the free pool: total minus used minus outstanding offers.
func (c *Cluster) available() mesos.Resources {
	free := c.total.Minus(c.used()...)
	for _, o := range c.offers {
		free.Subtract(o.resources...)
	}
	return free
}

// allocate offers the free pool to the connected, unsuppressed frameworks
// without an outstanding offer, in framework id order, skipping those whose
// decline filters cover the pool. Called on every change that may free
// resources or make a framework eligible.
func (c *Cluster) allocate() {
	if c.closing {
		return
	}
	ids := make([]string, 0, len(c.frameworks))
	for id := range c.frameworks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fw := c.frameworks[id]
		if fw.sub == nil || fw.suppressed || fw.offer != nil {
			continue
		}
		free := c.available()
		if !allocatable(free) {
			return
		}
		if fw.filtered(free) {
			continue
		}
		c.makeOffer(fw, free)
	}
}

func (fw *framework) filtered(free mesos.Resources) bool {
	for _, f := range fw.filters {
		if contains(f.resources, free) {
			return true
		}
	}
	return false
}

func (c *Cluster) makeOffer(fw *framework, free mesos.Resources) {
	o := &offer{id: fmt.Sprintf("%s-O%d", c.masterID, c.nextID()), fw: fw, resources: free}
	c.offers[o.id] = o
	fw.offer = o
	mo := mesos.Offer{
		ID:          mesos.OfferID{Value: o.id},
		FrameworkID: mesos.FrameworkID{Value: fw.id},
		AgentID:     mesos.AgentID{Value: c.agentID},
		Hostname:    c.cfg.Hostname,
		URL:         c.agentURL(),
		Resources:   forFramework(free, fw),
	}
	if role, ok := fw.allocationRole(); ok {
		mo.AllocationInfo = &mesos.Resource_AllocationInfo{Role: &role}
	}
	for id, e := range fw.executors {
		if e.state != execTerminated {
			mo.ExecutorIDs = append(mo.ExecutorIDs, mesos.ExecutorID{Value: id})
		}
	}
	fw.send(&scheduler.Event{Type: scheduler.Event_OFFERS, Offers: &scheduler.Event_Offers{Offers: []mesos.Offer{mo}}})
}

func (c *Cluster) agentURL() *mesos.URL {
	port := int32(c.port())
	return &mesos.URL{
		Scheme:  "http",
		Address: mesos.Address{Hostname: &c.cfg.Hostname, IP: strPtr("127.0.0.1"), Port: port},
		Path:    strPtr("/slave(1)"),
	}
}

// removeOffer drops the framework's outstanding offer, sending RESCIND when
// asked to and the framework is connected.
func (c *Cluster) removeOffer(fw *framework, rescind bool) {
	o := fw.offer
	if o == nil {
		return
	}
	delete(c.offers, o.id)
	fw.offer = nil
	if rescind {
		fw.send(&scheduler.Event{Type: scheduler.Event_RESCIND, Rescind: &scheduler.Event_Rescind{OfferID: mesos.OfferID{Value: o.id}}})
	}
}

// takeOffer removes and returns a valid outstanding offer of fw.
func (c *Cluster) takeOffer(fw *framework, id string) (*offer, error) {
	o := c.offers[id]
	if o == nil || o.fw != fw {
		return nil, fmt.Errorf("Offer %s is no longer valid", id)
	}
	c.removeOffer(fw, false)
	return o, nil
}

// addFilter refuses resources to fw for the filters' refuse_seconds.
func (c *Cluster) addFilter(fw *framework, rs mesos.Resources, filters *mesos.Filters) {
	const maxRefuse = 365 * 24 * time.Hour
	d := defaultRefuse
	if filters != nil && filters.RefuseSeconds != nil {
		switch secs := *filters.RefuseSeconds; {
		case secs >= maxRefuse.Seconds(): // compared in seconds: a huge value overflowed the Duration
			d = maxRefuse
		case secs >= 0:
			d = time.Duration(secs * float64(time.Second))
		} // negative or NaN (protobuf can carry it): the default
	}
	if d <= 0 || len(rs) == 0 {
		return
	}
	f := &filter{resources: rs}
	f.timer = time.AfterFunc(d, func() { c.expireFilter(fw, f) })
	fw.filters = append(fw.filters, f)
}

func (c *Cluster) expireFilter(fw *framework, f *filter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, g := range fw.filters {
		if g == f {
			fw.filters = append(fw.filters[:i], fw.filters[i+1:]...)
			c.allocate()
			return
		}
	}
}

func (c *Cluster) clearFilters(fw *framework) {
	for _, f := range fw.filters {
		f.timer.Stop()
	}
	fw.filters = nil
}

func (c *Cluster) decline(fw *framework, ids []mesos.OfferID, filters *mesos.Filters) {
	for _, id := range ids {
		o, err := c.takeOffer(fw, id.Value)
		if err != nil {
			c.log.Debug("decline of unknown offer", "framework_id", fw.id, "offer_id", id.Value)
			continue
		}
		c.addFilter(fw, o.resources, filters)
	}
	c.allocate()
}

func (c *Cluster) suppress(fw *framework) {
	fw.suppressed = true
}

func (c *Cluster) revive(fw *framework) {
	fw.suppressed = false
	c.clearFilters(fw)
	c.allocate()
}
