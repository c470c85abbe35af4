package round

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// Preemption is a running execution of a preemptible job the plan stops
// to give back capacity its namespace borrowed: the scheduler kills its
// tasks gracefully and queues the run again as a misfire.
type Preemption struct {
	Job       string   `json:"jobName"`
	Tasks     []string `json:"taskIds"`
	Namespace string   `json:"namespace"` // the victim's
	// For is the waiting entry (WaitKey) within its namespace's guarantee
	// that needs the capacity, and ForNamespace its namespace.
	For          string `json:"for"`
	ForNamespace string `json:"forNamespace"`
}

// PreemptionBy starts task.Entry.KilledBy of a task the scheduler stopped
// to give back borrowed capacity: while any is still running, no other is
// preempted (no cascade: what those kills free is used first).
const PreemptionBy = "preemption"

// IsPreemption reports whether a task's KilledBy is a preemption's.
func IsPreemption(killedBy string) bool { return strings.HasPrefix(killedBy, PreemptionBy) }

// annotate adds the namespace rule to the wait of an entry that waits for
// resources: within its guarantee, the capacity it needs is lent to other
// namespaces' work (until the soonest of them is expected to end), or the
// cluster is smaller than the guarantees in use. Entries within their
// guarantee are noted for preemption.
func (s *spaces) annotate(c *cand, w queue.Wait) queue.Wait {
	if !s.multi || c.class != classGuaranteed {
		return w
	}
	s.guaranteed = append(s.guaranteed, c)
	nr := queue.NamespaceRule{Guaranteed: true} // a copy: w may share its rule with the other waits of its shape
	if w.NamespaceRule != nil {
		nr = *w.NamespaceRule
		nr.Guaranteed = true
	}
	w.NamespaceRule = &nr
	inUse := c.ns.used.Add(s.cost(c))
	lent := false
	for _, ns := range s.byName {
		if ns == c.ns {
			continue
		}
		inUse = inUse.Add(ns.guaranteedUse())
		lent = lent || !ns.borrowed().IsZero()
	}
	w.Namespace = c.ns.name
	switch {
	case !s.total.IsZero() && !inUse.Fits(s.total):
		w.Rule = queue.RuleOvercommitted
		w.Message += fmt.Sprintf("; namespace %s is within its guarantee, but the cluster (%s) is smaller than the guarantees in use with this (%s)",
			c.ns.name, fmtRes(s.total), fmtRes(inUse))
	case lent:
		w.Rule = queue.RuleLent
		var until string
		for _, h := range w.Holders {
			if ns := s.byName[namespace.Of(h.Job)]; ns != c.ns && ns != nil && !ns.borrowed().IsZero() && !h.ExpectedEnd.IsZero() {
				w.Until, until = h.ExpectedEnd, fmt.Sprintf(" until %s (job %s of namespace %s is expected to end then)",
					fmtUntil(h.ExpectedEnd), namespace.Name(h.Job), ns.name)
				break
			}
		}
		w.Message += fmt.Sprintf("; namespace %s is within its guarantee: the capacity it needs is lent to other namespaces' work%s",
			c.ns.name, until)
	}
	return w
}

// victim is a running execution that may be preempted.
type victim struct {
	job    string
	ns     *nsState
	shards []shardAt
	cost   offers.Resources
	since  int64 // its newest shard's launch (newest first)
}

type shardAt struct {
	task, agent string
	res         offers.Resources
}

// preempt stops borrowed work of preemptible jobs when the first entry
// within its namespace's guarantee that waits for resources would fit
// once it ends. A victim's namespace stays at or above its guarantee
// after the preemption, so the victim, queued again, borrows and can
// never preempt in turn; no preemption starts while another's tasks are
// still being killed. It records the preemption in plan (whose launches
// are this round's).
func (s *spaces) preempt(plan *Plan) {
	if len(s.guaranteed) == 0 {
		return
	}
	for _, shards := range s.v.Running {
		for _, e := range shards {
			if IsPreemption(e.KilledBy) {
				return
			}
		}
	}
	c := s.guaranteed[0]
	on, spread := s.targets(c)
	if on != nil && len(on) == 0 {
		return // no cluster takes its work now: freeing resources serves nothing
	}
	vs := s.victims(c, on)
	if len(vs) == 0 {
		return
	}
	free := s.occ.freeAfter(plan.Launches)
	running := maps2(s.v.Executors, plan.Launches)
	var chosen []victim
	left := map[*nsState]*nsState{} // each victim's namespace as the victims chosen leave it
	for _, v := range vs {
		u, ok := left[v.ns]
		if !ok {
			u = v.ns
		}
		after := s.without(u, v)
		if !after.borrowsWhere(v, s.v) {
			continue
		}
		left[v.ns] = after
		chosen = append(chosen, v)
		for _, sh := range v.shards {
			free[sh.agent] = free[sh.agent].Add(sh.res)
		}
		if len(chosen) > maxVictims {
			return
		}
		if s.fitsFree(free, running, c, on, spread) {
			preemptFor(plan, c, chosen)
			return
		}
	}
}

// maxVictims bounds the executions one preemption stops.
const maxVictims = 64

// stays reports whether a namespace holding u is still at or above its
// guarantee on some resource, so no entry of it (every shard needs some
// CPU and memory) is within its guarantee.
func stays(u, g offers.Resources) bool { return u.CPU >= g.CPU || u.MemMB >= g.MemMB }

// without is ns's usage less v's shards, and less its retiring tasks whose replacement
// is launched (ns itself is not changed): those end as soon as their replacements run,
// so a namespace that stays at its guarantee only by them would soon be within it
// again, and the victim's run, queued again, would preempt back.
func (s *spaces) without(ns *nsState, v victim) *nsState {
	out := &nsState{name: ns.name, cap: ns.cap, used: ns.used.Sub(v.cost).Sub(ns.twice), usedOn: maps.Clone(ns.usedOn)}
	if out.usedOn != nil {
		for _, sh := range v.shards {
			cl := s.v.clusterOfAgent(sh.agent)
			out.usedOn[cl] = out.usedOn[cl].Sub(sh.res)
		}
		for cl, r := range ns.twiceOn {
			out.usedOn[cl] = out.usedOn[cl].Sub(r)
		}
	}
	return out
}

// borrowsWhere reports whether ns (a victim's namespace once v is stopped) still holds
// at least its guarantee where v's run would count again when queued: its global
// guarantee, and its guarantee on each cluster v ran on. So the run, queued again,
// borrows there and never preempts back what it gave; a guarantee of ns on some other
// cluster does not keep its borrowed work elsewhere from being preempted.
func (ns *nsState) borrowsWhere(v victim, view *View) bool {
	if len(ns.cap.PerCluster) == 0 || ns.usedOn == nil {
		return stays(ns.used, ns.allGuarantees())
	}
	if !stays(ns.rest(), ns.cap.Guarantee) {
		return false
	}
	for _, sh := range v.shards {
		cl := view.clusterOfAgent(sh.agent)
		if g := ns.cap.PerCluster[cl].Guarantee; !g.IsZero() && !stays(ns.usedOn[cl], g) {
			return false
		}
	}
	return true
}

// victims are the running executions of preemptible TRANSIENT jobs of
// other namespaces that hold more than their guarantee, with a shard on
// one of the clusters on (nil: anywhere): the namespace with the largest
// weighted share first, then the newest run first.
func (s *spaces) victims(c *cand, on []string) []victim {
	var out []victim
	for job, shards := range s.v.Running {
		ns := s.byName[namespace.Of(job)]
		if ns == nil || ns == c.ns || ns.borrowed().IsZero() || len(shards) == 0 {
			continue
		}
		cfg, _, _ := s.v.Jobs.Lookup(job)
		if !cfg.Preemptible || cfg.JobExecutionType != jobs.Transient {
			continue
		}
		res := offers.Resources{CPU: offers.CPUs(cfg.CPUCount), MemMB: offers.MemMB(cfg.MemoryMB)}
		v := victim{job: job, ns: ns}
		there := on == nil
		for _, e := range shards {
			there = there || slices.Contains(on, s.v.clusterOfAgent(e.AgentID))
			if !e.State.Live() || e.KilledBy != "" {
				v.shards = nil
				break
			}
			v.shards = append(v.shards, shardAt{task: e.TaskID, agent: e.AgentID, res: res})
			v.cost = v.cost.Add(res)
			v.since = max(v.since, e.LaunchedAt.UnixNano())
		}
		if len(v.shards) > 0 && there {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b victim) int {
		return cmp.Or(cmp.Compare(b.ns.share, a.ns.share), cmp.Compare(b.since, a.since), cmp.Compare(a.job, b.job))
	})
	return out
}

func maps2(execs map[offers.ExecutorKey]bool, ls []Launch) map[offers.ExecutorKey]bool {
	out := make(map[offers.ExecutorKey]bool, len(execs)+len(ls))
	for k, v := range execs {
		out[k] = v
	}
	for _, l := range ls {
		out[offers.ExecutorKey{App: l.Request.App, AgentID: l.AgentID}] = true
	}
	return out
}

// fitsFree tries c on what is free per agent: anywhere with on nil; else
// whole on one of the clusters on, or over them all when it spreads.
func (s *spaces) fitsFree(free map[string]offers.Resources, running map[offers.ExecutorKey]bool, c *cand, on []string, spread bool) bool {
	offs := make([]offers.Offer, 0, len(free))
	for a, r := range free {
		if r.CPU > 0 && r.MemMB > 0 {
			offs = append(offs, offers.Offer{ID: "free:" + a, AgentID: a, Free: r, Cluster: s.v.clusterOfAgent(a)})
		}
	}
	slices.SortFunc(offs, func(a, b offers.Offer) int { return cmp.Compare(a.ID, b.ID) })
	if on == nil {
		ok, _, _ := offers.NewMatcher(offs, running).Place(c.requests())
		return ok
	}
	if spread {
		ok, _, _ := offers.NewMatcher(offs, running).PlaceIn(c.requests(), on...)
		return ok
	}
	for _, cl := range on {
		if ok, _, _ := offers.NewMatcher(offs, running).PlaceIn(c.requests(), cl); ok {
			return true
		}
	}
	return false
}

// preemptFor records the preemption in the plan and in c's wait.
func preemptFor(plan *Plan, c *cand, vs []victim) {
	names := make([]string, 0, len(vs))
	for _, v := range vs {
		p := Preemption{Job: v.job, Namespace: v.ns.name, For: c.key, ForNamespace: c.ns.name}
		for _, s := range v.shards {
			p.Tasks = append(p.Tasks, s.task)
		}
		plan.Preempt = append(plan.Preempt, p)
		names = append(names, fmt.Sprintf("job %s of namespace %s", namespace.Name(v.job), v.ns.name))
	}
	w := plan.Waiting[c.key]
	w.Message += "; preempting the borrowed capacity of " + strings.Join(names, ", ") +
		" (preemptible: stopped gracefully and queued again as a misfire)"
	plan.Waiting[c.key] = w
}
