package mesos

import (
	"fmt"
	"math"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/engine"
)

const (
	resCPUs = "cpus"
	resMem  = "mem"
	milli   = 1000 // Mesos keeps scalars to three decimals; so do we, in integer milli-units
)

func toMilli(f float64) int64   { return int64(math.Round(f * milli)) }
func fromMilli(m int64) float64 { return float64(m) / milli }

// resourceRole is the role a resource is allocated from: the last reservation's role
// (refined reservations format), else the deprecated role field, else "*".
func resourceRole(r *mesos.Resource) string {
	if n := len(r.Reservations); n > 0 {
		return r.Reservations[n-1].GetRole()
	}
	if r.Role != nil && *r.Role != "" {
		return *r.Role
	}
	return "*"
}

// usable reports whether r is a plain scalar cpus or mem resource the framework may launch on:
// unreserved ("*") or reserved for its role (or an ancestor of it), allocated to its role,
// not revocable, shared or provided by a resource provider.
func (c *Client) usable(r *mesos.Resource) bool {
	if r.Name != resCPUs && r.Name != resMem {
		return false
	}
	if r.GetType() != mesos.SCALAR || r.Scalar == nil ||
		r.Revocable != nil || r.Shared != nil || r.ProviderID != nil || r.Disk != nil {
		return false
	}
	role := c.cfg.Role
	if rr := resourceRole(r); rr != "*" && rr != role && !strings.HasPrefix(role, rr+"/") {
		return false
	}
	if a := r.AllocationInfo; a != nil && a.Role != nil && *a.Role != role {
		return false
	}
	return true
}

// summarize converts a raw offer to the domain Offer.
func (c *Client) summarize(o *mesos.Offer) engine.Offer {
	var cpus, mem int64
	for i := range o.Resources {
		r := &o.Resources[i]
		if !c.usable(r) {
			continue
		}
		switch r.Name {
		case resCPUs:
			cpus += toMilli(r.Scalar.Value)
		case resMem:
			mem += toMilli(r.Scalar.Value)
		}
	}
	return engine.Offer{
		ID: o.ID.Value, AgentID: o.AgentID.Value, Hostname: o.Hostname,
		CPUs: fromMilli(cpus), MemMB: fromMilli(mem),
	}
}

// pool is the usable resources of the offers of one ACCEPT, from which launches are carved.
// Carved resources are copies of the offer's own resource objects (name, type, role,
// reservations, allocation_info) with only the scalar amount changed.
type pool struct {
	res  []mesos.Resource
	left []int64 // remaining milli-units of res[i]
}

func (c *Client) newPool(offers []*mesos.Offer) *pool {
	p := &pool{}
	for _, o := range offers {
		for i := range o.Resources {
			if r := &o.Resources[i]; c.usable(r) {
				p.res = append(p.res, *r)
				p.left = append(p.left, toMilli(r.Scalar.Value))
			}
		}
	}
	return p
}

// take carves amount of name out of the pool, spanning several resource objects if needed.
func (p *pool) take(name string, amount float64) ([]mesos.Resource, error) {
	need := toMilli(amount)
	if need <= 0 {
		return nil, nil
	}
	var out []mesos.Resource
	for i := range p.res {
		if p.res[i].Name != name || p.left[i] == 0 {
			continue
		}
		n := min(need, p.left[i])
		p.left[i] -= n
		need -= n
		out = append(out, withAmount(p.res[i], n))
		if need == 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: %s %.3f short by %.3f", ErrInsufficient, name, amount, fromMilli(need))
}

// template returns a resource object of name holding amount, shaped like the first usable
// resource of that name in the offers, without charging the pool. See the package
// documentation for why executor resources are built this way.
func (p *pool) template(name string, amount float64) ([]mesos.Resource, error) {
	m := toMilli(amount)
	if m <= 0 {
		return nil, nil
	}
	for i := range p.res {
		if p.res[i].Name == name {
			return []mesos.Resource{withAmount(p.res[i], m)}, nil
		}
	}
	return nil, fmt.Errorf("%w: no %s resource in the offers", ErrInsufficient, name)
}

func withAmount(r mesos.Resource, m int64) mesos.Resource {
	r.Scalar = &mesos.Value_Scalar{Value: fromMilli(m)}
	return r
}
