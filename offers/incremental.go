package offers

import (
	"fmt"
	"slices"
	"strings"
)

// Matcher places executions one at a time, in the caller's order: the
// incremental form of Match, for a launch round that decides per queue
// entry (package round). Free resources only ever shrink while it is used
// (placements and holds), so a request that did not fit will not fit
// later in the same round either.
type Matcher struct {
	m       *matcher
	running map[ExecutorKey]bool
	last    []placement // the last Place that succeeded (LastByCluster)
}

// NewMatcher starts matching on offers, with the executors already
// running (or being launched) per agent (only true values count).
func NewMatcher(offs []Offer, running map[ExecutorKey]bool) *Matcher {
	m := newMatcher(Input{Offers: offs})
	m.index(nil)
	return &Matcher{m: m, running: running}
}

// app registers an app, marking the agents where its executor runs.
func (x *Matcher) app(name string) int32 {
	m := x.m
	if p, ok := m.appNum[name]; ok {
		return p
	}
	p := int32(len(m.apps))
	m.appNum[name] = p
	m.apps = append(m.apps, appState{present: map[int32]bool{}})
	for a := range m.agents {
		if x.running[ExecutorKey{App: name, AgentID: m.agents[a].id}] {
			m.markPresent(p, int32(a))
		}
	}
	return p
}

// PlaceIn is Place on the offers of the clusters named only (Offer.Cluster).
func (x *Matcher) PlaceIn(reqs []Request, clusters ...string) (ok bool, reason Reason, detail string) {
	m := x.m
	if m.clusters == nil { // the agents with offers stay the same for the matcher's life
		m.clusters = map[string]bool{}
		for _, a := range m.agents {
			m.clusters[a.cluster] = true
		}
	}
	if !slices.ContainsFunc(clusters, func(c string) bool { return m.clusters[c] }) {
		return false, ReasonNoOffers, "no offers of " + clusterWords(clusters) + " in this round"
	}
	m.only = clusters
	defer func() { m.only = nil }()
	return x.Place(reqs)
}

func clusterWords(cs []string) string {
	if len(cs) == 1 {
		return "cluster " + cs[0]
	}
	return "clusters " + strings.Join(cs, ", ")
}

// Place places reqs all or none: the shards of one execution (a gang),
// or one failover shard. When they do not all fit nothing is placed, and
// the reason and detail say what kept the first shard that did not fit.
func (x *Matcher) Place(reqs []Request) (ok bool, reason Reason, detail string) {
	for i := range reqs {
		if why := invalid(&reqs[i]); why != "" {
			return false, ReasonInvalid, why
		}
		x.app(reqs[i].App)
	}
	if len(x.m.offers) == 0 {
		return false, ReasonNoOffers, "no offers in this round"
	}
	done := make([]placement, 0, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		if p, ok := x.m.place(r); ok {
			done = append(done, p)
			continue
		}
		reason, detail := x.m.diagnose(r)
		for j := len(done) - 1; j >= 0; j-- {
			x.m.undo(done[j])
		}
		if len(reqs) > 1 {
			return false, ReasonGangIncomplete, fmt.Sprintf("%d of %d shards placed before shard %d did not fit: %s: %s",
				i, len(reqs), r.Shard, reason, detail)
		}
		return false, reason, detail
	}
	x.last = done
	return true, "", ""
}

// LastByCluster is what the last successful Place took on each cluster (Offer.Cluster):
// its tasks, and the executors it started when withExecutors.
func (x *Matcher) LastByCluster(withExecutors bool) map[string]Resources {
	out := map[string]Resources{}
	for _, p := range x.last {
		cost := p.req.Task
		if withExecutors {
			cost = p.cost
		}
		cl := x.m.agents[x.m.offers[p.off].agent].cluster
		out[cl] = out[cl].Add(cost)
	}
	return out
}

// LastTasksByCluster is how many tasks the last successful Place put on each cluster
// (Offer.Cluster).
func (x *Matcher) LastTasksByCluster() map[string]int {
	out := map[string]int{}
	for _, p := range x.last {
		out[x.m.agents[x.m.offers[p.off].agent].cluster]++
	}
	return out
}

// Hold takes up to r of an agent's free resources out of what later Place
// calls may use (a reservation's earmark) and returns what it took. Held
// resources are not launched on: an offer with nothing but holds is
// declined by the plan.
func (x *Matcher) Hold(agentID string, r Resources) Resources {
	m := x.m
	a, ok := m.agentNum[agentID]
	if !ok {
		return Resources{}
	}
	var took Resources
	for _, off := range m.agents[a].offers {
		free := m.offers[off].free
		t := Resources{CPU: min(max(r.CPU-took.CPU, 0), free.CPU), MemMB: min(max(r.MemMB-took.MemMB, 0), free.MemMB)}
		if t.IsZero() {
			continue
		}
		m.resize(off, free.Sub(t))
		took = took.Add(t)
	}
	return took
}

// AgentFree returns what an agent's offers have free now (ok false: no
// offer of that agent is held).
func (x *Matcher) AgentFree(agentID string) (Resources, bool) {
	m := x.m
	a, ok := m.agentNum[agentID]
	if !ok {
		return Resources{}, false
	}
	var free Resources
	for _, off := range m.agents[a].offers {
		free = free.Add(m.offers[off].free)
	}
	return free, true
}

// Largest returns the most CPU and the most memory free in one offer (not
// necessarily the same offer); -1 each when no offer is held.
func (x *Matcher) Largest() Resources {
	return Resources{CPU: x.m.global.maxCPU(nil), MemMB: x.m.global.maxMem(nil)}
}

// Present reports whether app's executor runs (or is charged by a
// placement of this round) on the agent.
func (x *Matcher) Present(app, agentID string) bool {
	a, ok := x.m.agentNum[agentID]
	if !ok {
		return x.running[ExecutorKey{App: app, AgentID: agentID}]
	}
	return x.m.apps[x.app(app)].present[a]
}

// Absent is how many agents with offers held do not run app's executor
// (nor have it charged by a placement of this round): at most that many
// placements of app can still charge its executor.
func (x *Matcher) Absent(app string) int {
	return len(x.m.agents) - len(x.m.apps[x.app(app)].present)
}

// Plan returns the launches so far and the offers to decline (those with
// no launch, held ones included).
func (x *Matcher) Plan() Plan { return x.m.plan() }
