package embedded

import (
	"slices"
	"sort"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// The allocation decisions, as pure functions of the master's state: they
// read agents, frameworks and filters and change nothing; the allocator
// (allocator.go) applies what they decide and sends the events.

// grant is one decision of an allocation round: offer the agent's whole
// free pool to the framework.
type grant struct {
	fw    *framework
	agent *agent
}

// planOffers decides an allocation round over agents (in agent order) for
// fws (eligible frameworks, in the order they are served): each agent's
// free pool, when it is worth offering, goes whole to the first framework
// that holds no outstanding offer on that agent and whose decline filters
// on it do not cover the pool. An agent is offered to one framework per
// round; a framework may get offers of many agents.
func planOffers(agents []*agent, fws []*framework) []grant {
	var out []grant
	for _, a := range agents {
		free := a.free
		if !allocatable(free) {
			continue
		}
		for _, fw := range fws {
			if fw.offers[a.id] != nil || declined(fw.filters[a.id], free) {
				continue
			}
			out = append(out, grant{fw: fw, agent: a})
			break
		}
	}
	return out
}

// declined reports whether one of a framework's decline filters on an
// agent covers the pool it would be offered (Mesos: a filter refuses
// offers whose resources it contains).
func declined(filters []*filter, free mesos.Resources) bool {
	for _, f := range filters {
		if contains(f.resources, free) {
			return true
		}
	}
	return false
}

// eligibleFrameworks lists the frameworks that may receive offers,
// connected and not suppressed, in id order (the order they are served).
func eligibleFrameworks(frameworks map[string]*framework) []*framework {
	var out []*framework
	for _, fw := range frameworks {
		if fw.sub != nil && !fw.suppressed {
			out = append(out, fw)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// maxRefuse bounds Filters.refuse_seconds (a year).
const maxRefuse = 365 * 24 * time.Hour

// refuseFor is how long a DECLINE hides the declined resources: the
// filters' refuse_seconds, capped at a year; the Mesos default (5 s)
// without one, or for a negative or NaN value (protobuf can carry both).
// Zero means no filter.
func refuseFor(filters *mesos.Filters) time.Duration {
	if filters == nil || filters.RefuseSeconds == nil {
		return defaultRefuse
	}
	switch secs := *filters.RefuseSeconds; {
	case secs >= maxRefuse.Seconds(): // compared in seconds: a huge value overflows the Duration
		return maxRefuse
	case secs >= 0:
		return time.Duration(secs * float64(time.Second))
	}
	return defaultRefuse
}

// agentsToAllocate is the agents an allocation round covers, in agent
// order: every agent when all is set (a framework became eligible), else
// those queued because their pool may have grown. It sorts queued in
// place.
func agentsToAllocate(agents, queued []*agent, all bool) []*agent {
	if all {
		return agents
	}
	slices.SortFunc(queued, func(a, b *agent) int { return a.index - b.index })
	return queued
}

// offerFor is the offer fw is sent for a's free pool: the resources as
// the framework sees them (allocation info for MULTI_ROLE frameworks) and
// the ids of the framework's executors running on the agent.
func offerFor(id string, fw *framework, a *agent, free mesos.Resources, url *mesos.URL) mesos.Offer {
	mo := mesos.Offer{
		ID:          mesos.OfferID{Value: id},
		FrameworkID: mesos.FrameworkID{Value: fw.id},
		AgentID:     mesos.AgentID{Value: a.id},
		Hostname:    a.hostname,
		URL:         url,
		Resources:   forFramework(free, fw),
	}
	if role, ok := fw.allocationRole(); ok {
		mo.AllocationInfo = &mesos.Resource_AllocationInfo{Role: &role}
	}
	for _, e := range a.liveExecutors() {
		if e.fw == fw {
			mo.ExecutorIDs = append(mo.ExecutorIDs, mesos.ExecutorID{Value: e.id})
		}
	}
	return mo
}
