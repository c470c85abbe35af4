package round

import (
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// occupancy is what the running work holds where, as a round counts it:
// the running tasks and the apps' executors by agent (each indexed once per
// round), and what the agents have free by that count. The holders a wait
// names come from it (holders.go).
type occupancy struct {
	v       *View
	cluster emptyCluster         // the empty cluster (fit.go)
	byAgent map[string][]runTask // the running tasks by agent
	execs   map[string][]execRun // the executors running, by agent
	// holdersOf memoizes holders by what a task and its executor need: the
	// running work and the cluster do not change within a round.
	holdersOf map[offers.Resources][]queue.Holder
}

// runTask is a running (or retiring) task with the resources it holds.
type runTask struct {
	job      string
	item     int
	entry    task.Entry
	res      offers.Resources
	retiring bool
}

// tasksByAgent indexes the running tasks by agent (once per round).
func (o *occupancy) tasksByAgent() map[string][]runTask {
	if o.byAgent != nil {
		return o.byAgent
	}
	o.byAgent = map[string][]runTask{}
	o.v.eachHeld(func(job string, shards map[int]task.Entry, retiring bool) {
		cfg, _, _ := o.v.Jobs.Lookup(job)
		res := offers.Resources{CPU: offers.CPUs(cfg.CPUCount), MemMB: offers.MemMB(cfg.MemoryMB)}
		for item, e := range shards {
			o.byAgent[e.AgentID] = append(o.byAgent[e.AgentID], runTask{job: job, item: item, entry: e, res: res, retiring: retiring})
		}
	})
	return o.byAgent
}

// execRun is an app's executor running on an agent, with what it holds.
type execRun struct {
	app string
	res offers.Resources
}

// executorsByAgent indexes the executors known to run (once per round):
// the view's (View.Executors, idle ones too) and, once per app and agent,
// those of the running tasks, sorted by app.
func (o *occupancy) executorsByAgent() map[string][]execRun {
	if o.execs != nil {
		return o.execs
	}
	seen := map[offers.ExecutorKey]bool{}
	o.execs = map[string][]execRun{}
	add := func(k offers.ExecutorKey, a app.Config) {
		if seen[k] || k.AgentID == "" {
			return
		}
		seen[k] = true
		o.execs[k.AgentID] = append(o.execs[k.AgentID], execRun{app: k.App, res: offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}})
	}
	o.v.eachHeld(func(job string, shards map[int]task.Entry, _ bool) {
		_, a, _ := o.v.Jobs.Lookup(job)
		if a.AppName == "" {
			return // unknown: nothing to charge
		}
		for _, e := range shards {
			add(offers.ExecutorKey{App: a.AppName, AgentID: e.AgentID}, a)
		}
	})
	for k, up := range o.v.Executors {
		if !up || seen[k] {
			continue
		}
		a, ok := o.v.Jobs.App(k.App)
		if jobs.IsHTTPApp(k.App) {
			a, ok = app.HTTPOnly(), true
			a.AppName = k.App
		}
		if ok {
			add(k, a)
		}
	}
	for _, list := range o.execs {
		slices.SortFunc(list, func(x, y execRun) int { return strings.Compare(x.app, y.app) })
	}
	return o.execs
}

// freeByCount is what each agent has free by the running tasks' count:
// its total less the tasks' resources and the apps' executors there (once
// per app with a task there, and every one the view says runs, an idle
// one too). One offer per agent, even a full one ("free:{agent}"); an
// estimate (the engine's own use, other frameworks' and what was declined
// are not counted), for the reasons and the lending of guarantees.
func (o *occupancy) freeByCount() []offers.Offer {
	var out []offers.Offer
	execs := o.executorsByAgent()
	for _, a := range o.cluster {
		used := offers.Resources{}
		for _, rt := range o.tasksByAgent()[a.ID] {
			used = used.Add(rt.res)
		}
		for _, e := range execs[a.ID] {
			used = used.Add(e.res)
		}
		free := offers.Resources{CPU: max(a.Total.CPU-used.CPU, 0), MemMB: max(a.Total.MemMB-used.MemMB, 0)}
		out = append(out, offers.Offer{ID: "free:" + a.ID, AgentID: a.ID, Free: free, Cluster: a.Cluster})
	}
	return out
}

// freeAfter is what each agent has free by the running tasks' count
// less the launches (this round's).
func (o *occupancy) freeAfter(launches []Launch) map[string]offers.Resources {
	free := map[string]offers.Resources{}
	for _, off := range o.freeByCount() {
		free[off.AgentID] = free[off.AgentID].Add(off.Free)
	}
	for _, l := range launches {
		r := l.Request.Task
		if l.ChargesExecutor {
			r = r.Add(l.Request.Executor)
		}
		free[l.AgentID] = free[l.AgentID].Sub(r)
	}
	return free
}

// estimateBound is how many tasks a round with no offer held matches on
// the estimate of what is free (freeByCount) before the rest wait, unmatched,
// with the short reason: a round's worth (View.MaxTasks), what offers
// would launch at most. Every entry that fits the estimate stays unplaced
// (it launches nothing), so without a bound the whole queue was matched
// and worded with its holders: 10,000 ready entries beside 4,000 running
// tasks took 40 s and 8.8 GB (BenchmarkDecideNoOffers10kRunning), and a
// takeover's first round, before the engine's offers, held the loop 24 s.
func (d *decider) estimateBound() int {
	if d.v.MaxTasks > 0 {
		return d.v.MaxTasks
	}
	return defaultEstimateBound
}

// defaultEstimateBound is estimateBound with no View.MaxTasks.
const defaultEstimateBound = 8192
