package round

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

var spaceNames = []string{"default", "pay", "search", "ops"}

// randomTeamsView is randomView with its jobs spread over namespaces,
// each with a random capacity (guarantee, limit, quota, weight), some
// jobs preemptible, running tasks placed on agents, and fires ahead.
func randomTeamsView(rng *rand.Rand) View {
	v := randomView(rng)
	old := v.Jobs.(*catalog)
	cat := newCatalog()
	cat.apps = old.apps
	cat.disabledApps = old.disabledApps
	keyOf := map[string]string{}
	names := make([]string, 0, len(old.jobs))
	for name := range old.jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		j := old.jobs[name]
		ns := spaceNames[rng.Intn(len(spaceNames))]
		key := namespace.Key(ns, name)
		keyOf[name] = key
		j.JobName = key
		if ns != "default" && j.AppName != "" && rng.Intn(3) > 0 { // most run an app of their own namespace, its executor charged to it
			a := old.apps[j.AppName]
			a.AppName = namespace.Key(ns, j.AppName)
			cat.apps[a.AppName] = a
			cat.disabledApps[a.AppName] = old.disabledApps[j.AppName]
			j.AppName = a.AppName
		}
		j.Preemptible = j.JobExecutionType == jobs.Transient && rng.Intn(2) == 0
		if rng.Intn(3) == 0 {
			j.TimeoutSeconds = 1 + rng.Intn(30)
		}
		cat.jobs[key] = j
		cat.disabledJobs[key] = old.disabledJobs[name]
	}
	rename := func(name string) string {
		if k, ok := keyOf[name]; ok {
			return k
		}
		return name // "gone"
	}
	v.Jobs = cat
	var execs []offers.ExecutorKey // the namespaces' apps' executors here and there, idle ones too
	for k := range v.Executors {
		execs = append(execs, k)
	}
	slices.SortFunc(execs, func(a, b offers.ExecutorKey) int { return strings.Compare(a.App+"/"+a.AgentID, b.App+"/"+b.AgentID) })
	for _, k := range execs {
		for _, ns := range spaceNames[1:] {
			if _, ok := cat.apps[namespace.Key(ns, k.App)]; ok && rng.Intn(2) == 0 {
				v.Executors[offers.ExecutorKey{App: namespace.Key(ns, k.App), AgentID: k.AgentID}] = true
			}
		}
	}
	running := map[string]map[int]task.Entry{}
	agents := v.Agents
	runNames := make([]string, 0, len(v.Running))
	for name := range v.Running {
		runNames = append(runNames, name)
	}
	slices.Sort(runNames)
	for _, name := range runNames {
		shards := v.Running[name]
		key := rename(name)
		running[key] = map[int]task.Entry{}
		items := make([]int, 0, len(shards))
		for item := range shards {
			items = append(items, item)
		}
		slices.Sort(items)
		for _, item := range items {
			e := shards[item]
			if len(agents) > 0 {
				e.AgentID = agents[rng.Intn(len(agents))].ID
			}
			e.LaunchedAt = at(fmt.Sprint(900 + rng.Intn(100)))
			if rng.Intn(12) == 0 {
				e.KilledBy = PreemptionBy + " for namespace x"
			}
			running[key][item] = e
		}
	}
	v.Running = running
	for _, rd := range v.Ready {
		rd.Job = rename(rd.Job)
	}
	for i := range v.Failover {
		v.Failover[i].Job = rename(v.Failover[i].Job)
	}
	slices.SortFunc(v.Ready, queue.CompareReady)
	slices.SortFunc(v.Failover, func(a, b queue.Failover) int { return queue.CompareFailover(&a, &b) })
	v.Namespaces = map[string]Capacity{}
	for _, ns := range spaceNames {
		if rng.Intn(4) == 0 {
			continue // none
		}
		g := offers.Resources{CPU: offers.Milli(rng.Intn(3000)), MemMB: int64(rng.Intn(2048))}
		c := Capacity{Guarantee: g, Weight: float64(rng.Intn(4))}
		if rng.Intn(2) == 0 {
			c.Limit = &offers.Resources{CPU: g.CPU + offers.Milli(rng.Intn(3000)), MemMB: g.MemMB + int64(rng.Intn(4096))}
		}
		if rng.Intn(5) == 0 {
			c.Quota = &offers.Resources{CPU: offers.Milli(rng.Intn(4000)), MemMB: int64(rng.Intn(4096))}
		}
		v.Namespaces[ns] = c
	}
	keys := make([]string, 0, len(cat.jobs))
	for key := range cat.jobs {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		j := cat.jobs[key]
		if rng.Intn(2) == 0 {
			n := int64(j.ShardingTotalCount)
			v.Fires = append(v.Fires, Fire{Job: key, At: v.Now.Add(time.Duration(1+rng.Intn(120)) * time.Second),
				Need: offers.Resources{CPU: offers.CPUs(j.CPUCount) * offers.Milli(n), MemMB: offers.MemMB(j.MemoryMB) * n}})
		}
	}
	slices.SortFunc(v.Fires, func(a, b Fire) int { return a.At.Compare(b.At) })
	return v
}

// usageOf is what each namespace holds: its running tasks' shards and,
// once per app and agent, the executors of its apps (the view's, idle
// ones too, and the running tasks').
func usageOf(v View) map[string]offers.Resources {
	out := map[string]offers.Resources{}
	execs := map[offers.ExecutorKey]bool{}
	for k, up := range v.Executors {
		execs[k] = up
	}
	for job, shards := range v.Running {
		j, a, _ := v.Jobs.Lookup(job)
		n := int64(len(shards))
		ns := namespace.Of(job)
		out[ns] = out[ns].Add(offers.Resources{CPU: offers.CPUs(j.CPUCount) * offers.Milli(n), MemMB: offers.MemMB(j.MemoryMB) * n})
		for _, e := range shards {
			if a.AppName != "" && e.AgentID != "" {
				execs[offers.ExecutorKey{App: a.AppName, AgentID: e.AgentID}] = true
			}
		}
	}
	for k, up := range execs {
		a, ok := v.Jobs.App(k.App)
		owner, charged := execOwner(k.App)
		if up && ok && charged {
			out[owner] = out[owner].Add(offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)})
		}
	}
	return out
}

// launched is what a launch adds to its namespace: its task and the
// executor it starts, if its app is the namespace's.
func launched(l Launch) (string, offers.Resources) {
	ns := namespace.Of(l.Request.Job)
	r := l.Request.Task
	if owner, ok := execOwner(l.Request.App); ok && owner == ns && l.ChargesExecutor {
		r = r.Add(l.Request.Executor)
	}
	return ns, r
}

// TestCapacityProperties checks, on random rounds of several namespaces,
// what every plan must satisfy beyond TestDecideProperties': no
// namespace goes over its limit or quota; a borrower never takes
// capacity an entry within its namespace's guarantee could have used (so
// such an entry gets the next capacity that frees up); and preemption
// stops only borrowed, preemptible TRANSIENT work, for an entry within
// its guarantee that it makes fit, never while another is in flight, and
// never takes a namespace below its guarantee (so no cycle).
func TestCapacityProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(39))
	preempted := 0
	for i := range propertyRounds * 2 {
		v := randomTeamsView(rng)
		p := Decide(v)
		checkPlan(t, i, v, p)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("round %d: %s\nplan:\n%s", i, fmt.Sprintf(format, args...), joinLines(renderPlan(p)))
		}
		if q := Decide(v); fmt.Sprint(renderPlan(q)) != fmt.Sprint(renderPlan(p)) {
			fail("the same view gave two plans")
		}
		checkLimits(v, p, fail)
		checkGuaranteedFirst(v, p, fail)
		checkPreemptions(v, p, fail)
		preempted += len(p.Preempt)
	}
	if preempted == 0 {
		t.Fatal("no random round preempted anything: the preemption properties were never exercised")
	}
}

func checkLimits(v View, p Plan, fail func(string, ...any)) {
	start := usageOf(v)
	after := maps.Clone(start)
	for _, l := range p.Launches {
		ns, r := launched(l)
		after[ns] = after[ns].Add(r)
	}
	for ns, c := range v.Namespaces {
		ceil, ok, _ := c.ceiling()
		if ok && start[ns].Fits(ceil) && !after[ns].Fits(ceil) {
			fail("namespace %s goes to %s over its ceiling %s", ns, after[ns], ceil)
		}
	}
}

// checkGuaranteedFirst: an entry within its guarantee that waits for
// resources (not behind the reservation of an older one) would not fit
// the offers less the launches of entries within their guarantees: what
// borrowers took, it could not have used.
func checkGuaranteedFirst(v View, p Plan, fail func(string, ...any)) {
	rest, running := leftAfter(v, p, func(l Launch) bool { return !l.Borrowing })
	d := &decider{v: v, plan: Plan{Waiting: map[string]queue.Wait{}}}
	d.classify(len(v.Ready))
	for i := range d.cands {
		c := &d.cands[i]
		w := p.Waiting[c.key]
		if !w.InGuarantee() {
			continue
		}
		switch w.Reason {
		case queue.WaitGang, queue.WaitCPU, queue.WaitMem, queue.WaitResources, queue.WaitReserved:
		default:
			continue
		}
		if ok, _, _ := offers.NewMatcher(rest, running).Place(c.requests()); ok {
			fail("%s waits within its guarantee (%s) but fits what borrowers took", c.key, w.Reason)
		}
	}
}

func checkPreemptions(v View, p Plan, fail func(string, ...any)) {
	if len(p.Preempt) == 0 {
		return
	}
	for _, shards := range v.Running {
		for _, e := range shards {
			if IsPreemption(e.KilledBy) {
				fail("a preemption while another is in flight")
			}
		}
	}
	used := usageOf(v) // after the round: its launches count
	for _, l := range p.Launches {
		ns, r := launched(l)
		used[ns] = used[ns].Add(r)
	}
	for _, pr := range p.Preempt {
		j, _, _ := v.Jobs.Lookup(pr.Job)
		if !j.Preemptible || j.JobExecutionType != jobs.Transient {
			fail("preempts %s, which is not a preemptible TRANSIENT job", pr.Job)
		}
		if pr.Namespace == pr.ForNamespace {
			fail("preempts its own namespace's %s", pr.Job)
		}
		n := int64(len(v.Running[pr.Job]))
		used[pr.Namespace] = used[pr.Namespace].Sub(offers.Resources{CPU: offers.CPUs(j.CPUCount) * offers.Milli(n), MemMB: offers.MemMB(j.MemoryMB) * n})
		w := p.Waiting[pr.For]
		if !w.InGuarantee() {
			fail("preempts %s for %s, which is not within its guarantee", pr.Job, pr.For)
		}
	}
	for _, pr := range p.Preempt {
		if g := v.Namespaces[pr.Namespace].Guarantee; !stays(used[pr.Namespace], g) {
			fail("preempting takes namespace %s to %s, below its guarantee %s", pr.Namespace, used[pr.Namespace], g)
		}
	}
}
