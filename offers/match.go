package offers

import (
	"cmp"
	"fmt"
	"slices"
)

// Match places requests on offers. It is pure and deterministic: the same
// input gives the same plan, and reordering Input.Offers or Input.Requests
// changes nothing except which of two duplicates (same offer ID, or same
// Job, Shard and Kind) counts as the first. The package documentation
// describes the algorithm.
func Match(in Input) Plan {
	m := newMatcher(in)
	work := groups(m.screen(in.Requests))
	if len(m.offers) == 0 {
		for _, g := range work {
			for _, r := range g.reqs {
				m.unplace(r, ReasonNoOffers, "no offers in this round")
			}
		}
		return m.plan()
	}
	m.index(in.Running)
	for _, g := range work {
		if g.kind == Failover {
			for _, r := range g.reqs {
				if _, ok := m.place(r); !ok {
					reason, detail := m.diagnose(r)
					m.unplace(r, reason, detail)
				}
			}
			continue
		}
		m.gang(g.reqs)
	}
	return m.plan()
}

// offerState is one offer while matching; offers are numbered by ID order.
type offerState struct {
	id       string
	agent    int32
	free     Resources
	launches []Launch
}

type agentState struct {
	id      string
	cluster string
	offers  []int32 // offer numbers on this agent
	apps    []int32 // apps whose executor is present (running or charged)
}

type appState struct {
	present map[int32]bool // agent number -> executor running or charged
	idx     index          // offers on agents where the executor is present
}

// placement records one tentative launch so a gang can be rolled back.
type placement struct {
	req    *Request
	app    int32
	off    int32
	cost   Resources
	charge bool
}

type matcher struct {
	offers   []offerState
	agents   []agentState
	agentNum map[string]int32
	appNum   map[string]int32
	apps     []appState
	global   index // every offer
	unplaced []Unplaced
	// only, when not nil, are the clusters a placement may use (Matcher.PlaceIn): a
	// placement names one or a few, so a slice, not a set to build each time.
	only []string
	// clusters are those of the agents with offers (Matcher.PlaceIn), once asked.
	clusters map[string]bool
}

func newMatcher(in Input) *matcher {
	m := &matcher{agentNum: map[string]int32{}, appNum: map[string]int32{}}
	sorted := slices.Clone(in.Offers)
	slices.SortStableFunc(sorted, func(a, b Offer) int { return cmp.Compare(a.ID, b.ID) })
	for i, o := range sorted {
		if i > 0 && o.ID == sorted[i-1].ID {
			continue // duplicate offer id: the first one counts
		}
		a, ok := m.agentNum[o.AgentID]
		if !ok {
			a = int32(len(m.agents))
			m.agentNum[o.AgentID] = a
			m.agents = append(m.agents, agentState{id: o.AgentID, cluster: o.Cluster})
		}
		n := int32(len(m.offers))
		m.agents[a].offers = append(m.agents[a].offers, n)
		free := Resources{CPU: max(o.Free.CPU, 0), MemMB: max(o.Free.MemMB, 0)}
		m.offers = append(m.offers, offerState{id: o.ID, agent: a, free: free})
	}
	return m
}

func (m *matcher) key(off int32) entry {
	f := m.offers[off].free
	return entry{cpu: f.CPU, mem: f.MemMB, off: off}
}

// screen drops invalid and duplicate requests, reporting them, and returns
// the rest. The returned pointers refer to a private copy.
func (m *matcher) screen(reqs []Request) []*Request {
	type id struct {
		job   string
		shard int
		kind  Kind
	}
	seen := make(map[id]bool, len(reqs))
	own := slices.Clone(reqs)
	valid := make([]*Request, 0, len(own))
	for i := range own {
		r := &own[i]
		if why := invalid(r); why != "" {
			m.unplace(r, ReasonInvalid, why)
			continue
		}
		k := id{r.Job, r.Shard, r.Kind}
		if seen[k] {
			m.unplace(r, ReasonDuplicate, "an earlier request has the same job, shard and kind")
			continue
		}
		seen[k] = true
		valid = append(valid, r)
		if _, ok := m.appNum[r.App]; !ok {
			m.appNum[r.App] = int32(len(m.apps))
			m.apps = append(m.apps, appState{present: map[int32]bool{}})
		}
	}
	return valid
}

func invalid(r *Request) string {
	switch {
	case r.Job == "":
		return "empty job name"
	case r.Shard < 0:
		return "negative shard"
	case r.Kind != Ready && r.Kind != Failover:
		return "unknown kind " + r.Kind.String()
	case r.Task.CPU < 0 || r.Task.MemMB < 0:
		return "negative task resources"
	case r.Executor.CPU < 0 || r.Executor.MemMB < 0:
		return "negative executor resources"
	}
	return ""
}

// index builds the global index and, per requested app, the index of offers
// on agents where its executor already runs.
func (m *matcher) index(running map[ExecutorKey]bool) {
	m.global.e = make([]entry, 0, len(m.offers))
	for i := range m.offers {
		m.global.e = append(m.global.e, m.key(int32(i)))
	}
	slices.SortFunc(m.global.e, func(a, b entry) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	for k, ok := range running {
		p, known := m.appNum[k.App]
		if !ok || !known {
			continue
		}
		if a, found := m.agentNum[k.AgentID]; found {
			m.markPresent(p, a)
		}
	}
	// Running is a map: sort each agent's app list so nothing depends on
	// map iteration order.
	for i := range m.agents {
		slices.Sort(m.agents[i].apps)
	}
}

type group struct {
	kind   Kind
	job    string
	minSeq int64
	reqs   []*Request
}

// groups gathers requests per (kind, job) and orders them: failover before
// ready, then oldest first by the smallest Seq of the group, then job name;
// inside a group by shard.
func groups(reqs []*Request) []*group {
	type gk struct {
		kind Kind
		job  string
	}
	byKey := map[gk]*group{}
	var out []*group
	for _, r := range reqs {
		k := gk{r.Kind, r.Job}
		g := byKey[k]
		if g == nil {
			g = &group{kind: r.Kind, job: r.Job, minSeq: r.Seq}
			byKey[k] = g
			out = append(out, g)
		}
		g.minSeq = min(g.minSeq, r.Seq)
		g.reqs = append(g.reqs, r)
	}
	slices.SortFunc(out, func(a, b *group) int {
		if a.kind != b.kind {
			if a.kind == Failover {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.minSeq, b.minSeq), cmp.Compare(a.job, b.job))
	})
	for _, g := range out {
		slices.SortFunc(g.reqs, func(a, b *Request) int { return cmp.Compare(a.Shard, b.Shard) })
	}
	return out
}

func (m *matcher) unplace(r *Request, reason Reason, detail string) {
	m.unplaced = append(m.unplaced, Unplaced{Job: r.Job, Shard: r.Shard, Kind: r.Kind, Reason: reason, Detail: detail})
}

func (m *matcher) plan() Plan {
	p := Plan{Launches: map[string][]Launch{}, Unplaced: m.unplaced}
	for _, o := range m.offers {
		if len(o.launches) > 0 {
			p.Launches[o.id] = o.launches
		} else {
			p.Decline = append(p.Decline, o.id) // offers are in ID order
		}
	}
	return p
}

// gang places every request of one READY execution or none of them.
func (m *matcher) gang(reqs []*Request) {
	done := make([]placement, 0, len(reqs))
	for i, r := range reqs {
		p, ok := m.place(r)
		if ok {
			done = append(done, p)
			continue
		}
		reason, detail := m.diagnose(r)
		for j := len(done) - 1; j >= 0; j-- {
			m.undo(done[j])
		}
		msg := fmt.Sprintf("%d of %d shards placed before shard %d did not fit: %s: %s",
			i, len(reqs), r.Shard, reason, detail)
		for _, q := range reqs {
			m.unplace(q, ReasonGangIncomplete, msg)
		}
		return
	}
}

// place puts r on the best offer, if any, and records the launch.
func (m *matcher) place(r *Request) (placement, bool) {
	pn := m.appNum[r.App]
	if off := m.apps[pn].idx.bestFit(r.Task, m.allowed()); off >= 0 {
		return m.apply(placement{req: r, app: pn, off: off, cost: r.Task}), true
	}
	off := m.global.bestFit(r.Task.Add(r.Executor), m.allowed())
	if off < 0 {
		return placement{}, false
	}
	// No offer on an agent with the executor fits the task alone, so this
	// offer's agent has no executor for the app yet: it is charged here.
	m.markPresent(pn, m.offers[off].agent)
	return m.apply(placement{req: r, app: pn, off: off, cost: r.Task.Add(r.Executor), charge: true}), true
}

func (m *matcher) apply(p placement) placement {
	m.resize(p.off, m.offers[p.off].free.Sub(p.cost))
	o := &m.offers[p.off]
	o.launches = append(o.launches, Launch{Request: *p.req, OfferID: o.id, AgentID: m.agents[o.agent].id, ChargesExecutor: p.charge})
	return p
}

func (m *matcher) undo(p placement) {
	o := &m.offers[p.off]
	o.launches = o.launches[:len(o.launches)-1]
	m.resize(p.off, o.free.Add(p.cost))
	if p.charge {
		m.unmarkPresent(p.app, o.agent)
	}
}

// resize sets an offer's free resources and repositions it in every index
// that holds it.
func (m *matcher) resize(off int32, free Resources) {
	old := m.key(off)
	m.offers[off].free = free
	k := m.key(off)
	m.global.move(old, k)
	for _, a := range m.agents[m.offers[off].agent].apps {
		m.apps[a].idx.move(old, k)
	}
}

// markPresent records that app's executor is on agent a and adds the agent's
// offers to the app's index.
func (m *matcher) markPresent(app, a int32) {
	st := &m.apps[app]
	if st.present[a] {
		return
	}
	st.present[a] = true
	ag := &m.agents[a]
	ag.apps = append(ag.apps, app)
	for _, off := range ag.offers {
		st.idx.insert(m.key(off))
	}
}

// unmarkPresent reverses markPresent during a gang rollback.
func (m *matcher) unmarkPresent(app, a int32) {
	st := &m.apps[app]
	delete(st.present, a)
	ag := &m.agents[a]
	i := slices.Index(ag.apps, app)
	ag.apps = slices.Delete(ag.apps, i, i+1)
	for _, off := range ag.offers {
		st.idx.remove(m.key(off))
	}
}

// allowed is the filter of the offers a placement may use now (nil: every one).
func (m *matcher) allowed() func(off int32) bool {
	if m.only == nil {
		return nil
	}
	return func(off int32) bool { return slices.Contains(m.only, m.agents[m.offers[off].agent].cluster) }
}

// diagnose says which resource kept r from fitting in the current state.
func (m *matcher) diagnose(r *Request) (Reason, string) {
	app := &m.apps[m.appNum[r.App]]
	withExec := r.Task.Add(r.Executor)
	ok := m.allowed()
	cpuOK := app.idx.maxCPU(ok) >= r.Task.CPU || m.global.maxCPU(ok) >= withExec.CPU
	memOK := app.idx.maxMem(ok) >= r.Task.MemMB || m.global.maxMem(ok) >= withExec.MemMB
	detail := fmt.Sprintf("needs %s", r.Task)
	if !r.Executor.IsZero() {
		detail += fmt.Sprintf(" plus executor %s on an agent without one", r.Executor)
	}
	detail += fmt.Sprintf("; largest free cpus=%s, largest free mem=%dMB",
		max(m.global.maxCPU(ok), 0), max(m.global.maxMem(ok), 0))
	switch {
	case !cpuOK && !memOK:
		return ReasonInsufficientCPU, "cpu and mem short: " + detail
	case !cpuOK:
		return ReasonInsufficientCPU, "cpu short: " + detail
	case !memOK:
		return ReasonInsufficientMem, "mem short: " + detail
	}
	return ReasonInsufficientResources, "no single offer has both: " + detail
}
