package round

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

const propertyRounds = 2000

// randomView builds a small random round: agents with offers (some
// agents known only by inventory or only by offers), apps with executors
// running here and there, and ready and failover entries of jobs of both
// types, some disabled, staged, backing off or running.
func randomView(rng *rand.Rand) View {
	cat := newCatalog()
	v := View{Now: at("1000"), Connected: true, Jobs: cat, Running: map[string]map[int]task.Entry{},
		Executors: map[offers.ExecutorKey]bool{}, MaxTasks: []int{0, 0, 3, 8}[rng.Intn(4)]}
	for a := range rng.Intn(5) {
		id := fmt.Sprintf("a%d", a)
		total := offers.Resources{CPU: offers.Milli(500 + rng.Intn(4000)), MemMB: int64(256 + rng.Intn(4096))}
		if rng.Intn(5) > 0 {
			v.Agents = append(v.Agents, Agent{ID: id, Total: total})
		}
		if rng.Intn(4) > 0 {
			free := offers.Resources{CPU: offers.Milli(rng.Intn(int(total.CPU) + 1)), MemMB: int64(rng.Intn(int(total.MemMB) + 1))}
			v.Offers = append(v.Offers, offers.Offer{ID: fmt.Sprintf("o%d", a), AgentID: id, Free: free})
		}
	}
	apps := []string{"p", "q"}
	for _, name := range apps {
		cat.apps[name] = app.Config{AppName: name, CPUCount: float64(rng.Intn(3)) / 10, MemoryMB: float64(rng.Intn(3) * 32)}
		for a := range 5 {
			if rng.Intn(3) == 0 {
				v.Executors[offers.ExecutorKey{App: name, AgentID: fmt.Sprintf("a%d", a)}] = true
			}
		}
	}
	for j := range rng.Intn(10) {
		name := fmt.Sprintf("j%d", j)
		job := jobs.Config{JobName: name, AppName: apps[rng.Intn(2)], ShardingTotalCount: 1 + rng.Intn(4),
			CPUCount: float64(1+rng.Intn(15)) / 10, MemoryMB: float64(16 * (1 + rng.Intn(16))), JobExecutionType: jobs.Transient}
		if rng.Intn(6) == 0 {
			job.JobExecutionType = jobs.Daemon
		}
		cat.jobs[name] = job
		cat.disabledJobs[name] = rng.Intn(10) == 0
		if rng.Intn(5) == 0 {
			v.Running[name] = map[int]task.Entry{rng.Intn(job.ShardingTotalCount): {TaskID: name, State: task.Running}}
		}
		if rng.Intn(4) > 0 {
			rd := &queue.Ready{Job: name, Count: 1, Since: at(fmt.Sprint(rng.Intn(20)))}
			if rng.Intn(8) == 0 {
				rd.NotBefore = at(fmt.Sprint(990 + rng.Intn(20)))
			}
			v.Ready = append(v.Ready, rd)
		}
		if rng.Intn(5) == 0 { // one failed shard, or several of the job at once (an agent lost)
			items := map[int]bool{}
			for range 1 + rng.Intn(3) {
				item := rng.Intn(job.ShardingTotalCount + 1)
				if items[item] {
					continue
				}
				items[item] = true
				f := queue.Failover{Job: name, Item: item, Since: at(fmt.Sprint(rng.Intn(20)))}
				if rng.Intn(4) == 0 {
					f.NotBefore = at(fmt.Sprint(990 + rng.Intn(20)))
				}
				v.Failover = append(v.Failover, f)
			}
		}
	}
	if rng.Intn(3) == 0 {
		v.Ready = append(v.Ready, &queue.Ready{Job: "gone", Count: 1, Since: at("3")})
	}
	slices.SortFunc(v.Ready, queue.CompareReady)
	slices.SortFunc(v.Failover, func(a, b queue.Failover) int { return queue.CompareFailover(&a, &b) })
	return v
}

// TestDecideProperties checks, on random rounds, what every plan must
// satisfy: nothing is placed beyond what is on offer (executors counted),
// gangs launch whole, every entry launches or has a reason, nothing that
// waits for resources would fit what the round left unused and unheld,
// and the same view gives the same plan.
func TestDecideProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := range propertyRounds {
		v := randomView(rng)
		p := Decide(v)
		checkPlan(t, i, v, p)
		if q := Decide(v); fmt.Sprint(renderPlan(q)) != fmt.Sprint(renderPlan(p)) {
			t.Fatalf("round %d: the same view gave two plans", i)
		}
	}
}

func checkPlan(t *testing.T, i int, v View, p Plan) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %d: %s\nview: %+v\nplan:\n%s", i, fmt.Sprintf(format, args...), v, joinLines(renderPlan(p)))
	}
	// nothing over what is on offer, per agent; executors charged once
	free := map[string]offers.Resources{}
	for _, o := range v.Offers {
		free[o.AgentID] = free[o.AgentID].Add(o.Free)
	}
	used := map[string]offers.Resources{}
	charged := map[offers.ExecutorKey]bool{}
	shards := map[string]int{}
	for _, l := range p.Launches {
		u := used[l.AgentID].Add(l.Request.Task)
		k := offers.ExecutorKey{App: l.Request.App, AgentID: l.AgentID}
		if l.ChargesExecutor {
			if v.Executors[k] || charged[k] {
				fail("executor %v charged twice", k)
			}
			charged[k] = true
			u = u.Add(l.Request.Executor)
		} else if !v.Executors[k] && !charged[k] {
			fail("launch %+v without its executor", l.Launch)
		}
		used[l.AgentID] = u
		if l.Ready != nil {
			shards[l.Request.Job]++
		}
		if f := l.Failover; f != nil {
			key := queue.WaitKey(true, f.Job, f.Item)
			if f.Job != l.Request.Job || f.Item != l.Request.Shard {
				fail("launch of shard %s/%d carries failover entry %s", l.Request.Job, l.Request.Shard, key)
			}
			if shards[key]++; shards[key] > 1 {
				fail("failover entry %s launched twice", key)
			}
		}
	}
	for a, u := range used {
		if !u.Fits(free[a]) {
			fail("agent %s: %s placed on %s offered", a, u, free[a])
		}
	}
	if v.MaxTasks > 0 && len(p.Launches) > v.MaxTasks && !p.Chunked {
		fail("%d launches over the bound %d", len(p.Launches), v.MaxTasks)
	}
	// gangs whole; every entry launched, waiting with a reason, or removed
	dropped := map[string]bool{}
	for _, s := range append(slices.Clone(p.Drop), p.Remove...) {
		dropped[queue.WaitKey(s.Fail, s.Job, s.Item)] = true
	}
	for _, rd := range v.Ready {
		key := queue.WaitKey(false, rd.Job, 0)
		j, _, _ := v.Jobs.Lookup(rd.Job)
		n := shards[rd.Job]
		want := j.ShardingTotalCount - len(v.Running[rd.Job])
		_, waits := p.Waiting[key]
		switch {
		case n > 0 && n != want:
			fail("%s: %d of %d shards launched", key, n, want)
		case n > 0 && waits:
			fail("%s launched and waits", key)
		case n == 0 && !waits && !dropped[key]:
			fail("%s neither launched nor waits", key)
		}
	}
	for _, f := range v.Failover {
		key := queue.WaitKey(true, f.Job, f.Item)
		_, waits := p.Waiting[key]
		launched := slices.ContainsFunc(p.Launches, func(l Launch) bool { return l.Failover != nil && *l.Failover == f })
		if !launched && !waits && !dropped[key] {
			fail("%s neither launched nor waits", key)
		}
	}
	checkNothingIdleFits(t, fail, v, p)
}

// checkNothingIdleFits: an entry that waits for resources (not for the
// round's bound, the reservation, or because it never fits) would not fit
// what the round leaves free and unheld.
func checkNothingIdleFits(t *testing.T, fail func(string, ...any), v View, p Plan) {
	t.Helper()
	rest, running := leftAfter(v, p, func(Launch) bool { return true })
	d := &decider{v: v, plan: Plan{Waiting: map[string]queue.Wait{}}}
	d.classify(len(v.Ready))
	for i := range d.cands {
		c := &d.cands[i]
		w := p.Waiting[c.key]
		switch w.Reason {
		case queue.WaitGang, queue.WaitCPU, queue.WaitMem, queue.WaitResources:
		default:
			continue
		}
		m := offers.NewMatcher(rest, running)
		if ok, _, _ := m.Place(c.requests()); ok {
			fail("%s waits (%s) but fits what the round left unused", c.key, w.Reason)
		}
	}
}

// leftAfter is what the view's offers hold after the plan's launches that
// count says to take, and the executors running then.
func leftAfter(v View, p Plan, count func(Launch) bool) ([]offers.Offer, map[offers.ExecutorKey]bool) {
	left := map[string]offers.Resources{}
	for _, o := range v.Offers {
		left[o.ID] = o.Free
	}
	running := maps.Clone(v.Executors)
	if running == nil {
		running = map[offers.ExecutorKey]bool{}
	}
	for _, l := range p.Launches {
		if !count(l) {
			continue
		}
		c := l.Request.Task
		if l.ChargesExecutor {
			c = c.Add(l.Request.Executor)
		}
		left[l.OfferID] = left[l.OfferID].Sub(c)
		running[offers.ExecutorKey{App: l.Request.App, AgentID: l.AgentID}] = true
	}
	var rest []offers.Offer
	for _, o := range v.Offers {
		rest = append(rest, offers.Offer{ID: o.ID, AgentID: o.AgentID, Free: left[o.ID]})
	}
	return rest, running
}

func joinLines(ls []string) string {
	out := ""
	for _, l := range ls {
		out += l + "\n"
	}
	return out
}

func TestFitsEmpty(t *testing.T) {
	two := []Agent{{ID: "a1", Total: offers.Resources{CPU: 2000, MemMB: 7800}}}
	cpu := func(c float64) offers.Resources { return offers.Resources{CPU: offers.CPUs(c), MemMB: 64} }
	if f := FitsEmpty(two, 2, cpu(1), cpu(0.1)); !f.Never || f.Shard || !strings.Contains(f.Message, "it needs 2.1 CPUs and 192 MB: 2 CPUs and 128 MB for the 2 shards, 0.1 CPUs and 64 MB for the app's executor") {
		t.Fatalf("2 × 1 CPU + 0.1 on 2 CPUs: %+v", f)
	}
	if f := FitsEmpty(two, 2, cpu(0.5), cpu(0.1)); f.Never {
		t.Fatalf("2 × 0.5 CPU fits: %+v", f)
	}
	if f := FitsEmpty(two, 1, cpu(3), cpu(0.1)); !f.Never || !f.Shard {
		t.Fatalf("one shard of 3 CPUs: %+v", f)
	}
	if f := FitsEmpty(nil, 100, cpu(3), cpu(0.1)); f.Never {
		t.Fatalf("no agent known: %+v", f)
	}
}
