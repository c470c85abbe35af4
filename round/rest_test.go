package round

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// decideWhole is the round over the whole backlog at once: every entry
// classified, then placed in the namespaces' order (Decide before the
// head and the rest).
func decideWhole(v View) Plan {
	d := &decider{v: v, plan: Plan{Waiting: map[string]queue.Wait{}}}
	d.classify(len(v.Ready))
	if !v.Connected {
		d.waitAll(queue.WaitNotSubscribed, "the scheduler is not subscribed to its cluster engine at the moment (it re-subscribes with backoff)")
	} else {
		d.place()
	}
	return d.plan
}

// smallHead makes the head as short as the bound allows, so random
// rounds of a few dozen entries have a rest.
func smallHead(t *testing.T) {
	f, m := headFactor, headMin
	headFactor, headMin = 1, 1
	t.Cleanup(func() { headFactor, headMin = f, m })
}

// randomBacklogView is a round with a backlog larger than its bound: a
// few agents with offers, two apps, up to 120 jobs ready (some disabled,
// staged, running, failing over, too large for the cluster, gone), in
// one namespace, or now and then with a job of another namespace or a
// capacity (the round then decides over the whole backlog).
func randomBacklogView(rng *rand.Rand) View {
	cat := newCatalog()
	v := View{Now: at("1000"), Connected: rng.Intn(12) > 0, Jobs: cat, Running: map[string]map[int]task.Entry{},
		Executors: map[offers.ExecutorKey]bool{}, MaxTasks: 1 + rng.Intn(12)}
	for a := range 1 + rng.Intn(6) {
		id := fmt.Sprintf("a%d", a)
		total := offers.Resources{CPU: offers.Milli(1000 + rng.Intn(4000)), MemMB: int64(512 + rng.Intn(4096))}
		v.Agents = append(v.Agents, Agent{ID: id, Total: total})
		if rng.Intn(5) > 0 {
			free := offers.Resources{CPU: offers.Milli(rng.Intn(int(total.CPU) + 1)), MemMB: int64(rng.Intn(int(total.MemMB) + 1))}
			v.Offers = append(v.Offers, offers.Offer{ID: fmt.Sprintf("o%d", a), AgentID: id, Free: free})
		}
	}
	apps := []string{"p", "q"}
	for _, name := range apps {
		cat.apps[name] = app.Config{AppName: name, CPUCount: float64(rng.Intn(3)) / 10, MemoryMB: float64(rng.Intn(3) * 32)}
		for a := range 6 {
			if rng.Intn(3) == 0 {
				v.Executors[offers.ExecutorKey{App: name, AgentID: fmt.Sprintf("a%d", a)}] = true
			}
		}
	}
	other := rng.Intn(6) == 0
	for j := range rng.Intn(120) {
		name := fmt.Sprintf("j%03d", j)
		if other && rng.Intn(40) == 0 {
			name = "team~" + name
		}
		job := jobs.Config{JobName: name, AppName: apps[rng.Intn(2)], ShardingTotalCount: 1 + rng.Intn(4),
			CPUCount: float64(1+rng.Intn(10)) / 10, MemoryMB: float64(16 * (1 + rng.Intn(16))), JobExecutionType: jobs.Transient}
		switch rng.Intn(20) {
		case 0:
			job.JobExecutionType = jobs.Daemon
		case 1:
			job.CPUCount = 64 // never fits
		}
		cat.jobs[name] = job
		cat.disabledJobs[name] = rng.Intn(15) == 0
		if rng.Intn(8) == 0 {
			v.Running[name] = map[int]task.Entry{rng.Intn(job.ShardingTotalCount): {TaskID: name, State: task.Running, AgentID: "a0"}}
		}
		rd := &queue.Ready{Job: name, Count: 1, Since: at(fmt.Sprint(rng.Intn(200)))}
		if rng.Intn(10) == 0 {
			rd.NotBefore = at(fmt.Sprint(990 + rng.Intn(20)))
		}
		v.Ready = append(v.Ready, rd)
		if rng.Intn(12) == 0 {
			f := queue.Failover{Job: name, Item: rng.Intn(job.ShardingTotalCount + 1), Since: at(fmt.Sprint(rng.Intn(200)))}
			if rng.Intn(4) == 0 {
				f.NotBefore = at(fmt.Sprint(990 + rng.Intn(20)))
			}
			v.Failover = append(v.Failover, f)
		}
	}
	if rng.Intn(3) == 0 {
		v.Ready = append(v.Ready, &queue.Ready{Job: "gone", Count: 1, Since: at(fmt.Sprint(rng.Intn(200)))})
	}
	switch rng.Intn(10) {
	case 0:
		v.Namespaces = map[string]Capacity{"default": {Limit: &offers.Resources{CPU: 3000, MemMB: 4096}}}
	case 1: // a guarantee: the entries within it go first, wherever they are in the backlog
		v.Namespaces = map[string]Capacity{"default": {Guarantee: offers.Resources{CPU: offers.Milli(500 + rng.Intn(4000)), MemMB: int64(256 + rng.Intn(4096))}}}
	}
	if rng.Intn(10) == 0 && len(v.Running) > 0 {
		v.Unconfirmed, v.ReconcileUntil = map[string]bool{}, at("1005")
		for job := range v.Running {
			v.Unconfirmed[job] = true
		}
	}
	if rng.Intn(8) == 0 { // a new term's catch-up queues some jobs' missed fires
		v.CatchingUp = map[string]bool{}
		for _, rd := range v.Ready {
			if rng.Intn(10) == 0 {
				v.CatchingUp[rd.Job] = true
			}
		}
	}
	slices.SortFunc(v.Ready, queue.CompareReady)
	slices.SortFunc(v.Failover, func(a, b queue.Failover) int { return queue.CompareFailover(&a, &b) })
	return v
}

// TestCatchingUpJobsWait: while a new term's catch-up queues a job's
// missed fires, the job's ready entry waits (staged, with why), and the
// other jobs' work launches.
func TestCatchingUpJobsWait(t *testing.T) {
	v := benchView(50, 512)
	v.CatchingUp = map[string]bool{"job-000003": true}
	p := Decide(v)
	w, ok := p.Waiting[queue.WaitKey(false, "job-000003", 0)]
	if !ok || w.Reason != queue.WaitStaged || !strings.Contains(w.Message, "catch-up") {
		t.Fatalf("the catching-up job waits with %+v (%v), want staged for the catch-up", w, ok)
	}
	for _, l := range p.Launches {
		if l.Ready != nil && l.Ready.Job == "job-000003" {
			t.Fatal("the catching-up job's entry launched")
		}
	}
	if len(p.Launches) == 0 {
		t.Fatal("nothing else launched")
	}
}

// TestBoundedDecisionIsTheWholeOne: a round decided over its head and
// finished with its rest gives exactly the plan of the round over the
// whole backlog at once (launches, declines, reservation, every reason,
// stale entries, wake-up, depth, busy, idle, more), on random rounds with
// backlogs, on the package's random rounds and on its random rounds of
// teams. Before Finish, a plan that launches with More set already has
// the Decline, Busy and Idle the launcher acts on before the rest.
func TestBoundedDecisionIsTheWholeOne(t *testing.T) {
	smallHead(t)
	rng := rand.New(rand.NewSource(54))
	gens := []func(*rand.Rand) View{randomBacklogView, randomBacklogView, randomView, randomTeamsView}
	bounded := 0
	for i := range propertyRounds * 2 {
		v := gens[i%len(gens)](rng)
		whole := decideWhole(v)
		p, rest := Begin(v)
		if rest != nil {
			bounded++
			if len(p.Launches) > 0 && p.More && (p.Decline != nil || !p.Busy || p.Idle) {
				t.Fatalf("round %d: before its rest, a launching plan with More has decline %v, busy %v, idle %v", i, p.Decline, p.Busy, p.Idle)
			}
		}
		rest.Finish(&p)
		rest.Finish(&p) // once only
		if !reflect.DeepEqual(p, whole) {
			t.Fatalf("round %d (bounded: %v): the plans differ\nbounded:\n%s\nwhole:\n%s\nview: %+v", i, rest != nil,
				joinLines(renderPlan(p)), joinLines(renderPlan(whole)), v)
		}
		checkPlan(t, i, v, p)
	}
	t.Logf("%d of %d rounds decided over their head", bounded, propertyRounds*2)
	if bounded < propertyRounds/4 {
		t.Fatalf("only %d of %d random rounds were decided over their head: the rest was hardly exercised", bounded, propertyRounds*2)
	}
}

// TestBacklogBeyondTheHead: a backlog of 5,000 executions in one
// namespace, a round bounded at 512 tasks: the round is decided over its
// head (the rest left to Finish), and gives the whole round's plan.
func TestBacklogBeyondTheHead(t *testing.T) {
	v := benchView(5_000, 512)
	p, rest := Begin(v)
	if rest == nil {
		t.Fatal("a round over 5,000 ready entries bounded at 512 tasks was decided over the whole backlog")
	}
	if len(p.Waiting) >= len(v.Ready) {
		t.Fatalf("before its rest the plan has %d reasons for %d entries", len(p.Waiting), len(v.Ready))
	}
	rest.Finish(&p)
	if whole := decideWhole(v); !reflect.DeepEqual(p, whole) {
		t.Fatalf("the plans differ: %d launches and %d reasons against %d and %d", len(p.Launches), len(p.Waiting), len(whole.Launches), len(whole.Waiting))
	}
	// a job of another namespace at the end of the backlog: decided whole
	cat := v.Jobs.(*catalog)
	cat.jobs["team~late"] = jobs.Config{JobName: "team~late", AppName: "app-00", ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 32, JobExecutionType: jobs.Transient}
	v.Ready = append(v.Ready, &queue.Ready{Job: "team~late", Count: 1, Since: at("200000")})
	if _, rest := Begin(v); rest != nil {
		t.Fatal("a backlog with two namespaces was decided over its head")
	}
}
