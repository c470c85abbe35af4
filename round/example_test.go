package round_test

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
)

// catalog is a round.Catalog over two maps.
type catalog struct {
	jobs map[string]jobs.Config
	apps map[string]app.Config
}

func (c catalog) Lookup(name string) (jobs.Config, app.Config, jobs.Runnability) {
	j, ok := c.jobs[name]
	if !ok {
		return j, app.Config{}, jobs.JobMissing
	}
	a, ok := c.apps[j.AppName]
	f := jobs.Facts{Job: &j}
	if ok {
		f.App = &a
	}
	return j, jobs.AppOf(j, f.App), jobs.CanRun(f)
}

func (c catalog) App(name string) (app.Config, bool) {
	a, ok := c.apps[name]
	return a, ok
}

// One round on one agent offering 2 CPUs: the older job's two shards
// launch (the first one also starts the app's executor); the younger
// job's shard does not fit beside them, so it waits, as the oldest such
// work holding a reservation on what frees up (its Wait also carries a
// message with the figures). Decide reads only its View: no store, no clock, no
// engine.
func ExampleDecide() {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	demo := app.Config{AppName: "demo", CPUCount: 0.1, MemoryMB: 32}
	job := func(name string, shards int, cpu float64) jobs.Config {
		j := jobs.Default()
		j.JobName, j.AppName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = name, "demo", shards, cpu, 64
		return j
	}
	cat := catalog{apps: map[string]app.Config{"demo": demo},
		jobs: map[string]jobs.Config{"report": job("report", 2, 0.9), "backup": job("backup", 1, 1)}}
	total := offers.Resources{CPU: offers.CPUs(2), MemMB: 4096}
	plan := round.Decide(round.View{
		Now:       now,
		Connected: true,
		Ready: []*queue.Ready{
			{Job: "report", Count: 1, Since: now.Add(-2 * time.Second)},
			{Job: "backup", Count: 1, Since: now.Add(-time.Second)},
		},
		Jobs:   cat,
		Offers: []offers.Offer{{ID: "o1", AgentID: "a1", Hostname: "host1", Free: total}},
		Agents: []round.Agent{{ID: "a1", Total: total}},
	})
	for _, l := range plan.Launches {
		fmt.Printf("launch %s/%d on %s, executor started: %v\n", l.Request.Job, l.Request.Shard, l.OfferID, l.ChargesExecutor)
	}
	w := plan.Waiting[queue.WaitKey(false, "backup", 0)]
	fmt.Println("backup waits:", w.Reason)
	fmt.Println("reservation held for:", plan.Reservation.Key)
	fmt.Println("busy:", plan.Busy)
	// Output:
	// launch report/0 on o1, executor started: true
	// launch report/1 on o1, executor started: false
	// backup waits: reserved
	// reservation held for: ready/backup
	// busy: true
}
