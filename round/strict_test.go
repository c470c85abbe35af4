package round

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// The reservation property, on random clusters and queues run over time:
// the execution that holds the reservation launches no later than it
// would under strict oldest-first (where nothing launches after the
// oldest execution that does not fit), while later work backfills.

// simJob is one execution in the simulation: it arrives at a step, and
// each of its tasks runs for dur steps.
type simJob struct {
	cfg     jobs.Config
	arrives int
	dur     int
}

type simTask struct {
	job, app, agent string
	use             offers.Resources
	ends            int
}

type sim struct {
	agents []Agent
	apps   map[string]app.Config
	jobs   []simJob
}

func randomSim(rng *rand.Rand) sim {
	s := sim{apps: map[string]app.Config{}}
	for a := range 1 + rng.Intn(4) {
		s.agents = append(s.agents, Agent{ID: fmt.Sprintf("a%d", a),
			Total: offers.Resources{CPU: offers.Milli(1000 * (1 + rng.Intn(4))), MemMB: int64(1024 * (1 + rng.Intn(4)))}})
	}
	for _, name := range []string{"p", "q"} {
		s.apps[name] = app.Config{AppName: name, CPUCount: float64(rng.Intn(3)) / 10, MemoryMB: float64(rng.Intn(3) * 32)}
	}
	for j := range 4 + rng.Intn(12) {
		cfg := jobs.Config{JobName: fmt.Sprintf("j%02d", j), AppName: []string{"p", "q"}[rng.Intn(2)],
			ShardingTotalCount: 1 + rng.Intn(4), CPUCount: float64(1+rng.Intn(20)) / 10,
			MemoryMB: float64(64 * (1 + rng.Intn(12))), JobExecutionType: jobs.Transient}
		s.jobs = append(s.jobs, simJob{cfg: cfg, arrives: rng.Intn(12), dur: 1 + rng.Intn(10)})
	}
	return s
}

// run simulates steps rounds with decide, and returns when each job
// launched (-1: never) and the first reservation's holder ("" if none).
func (s sim) run(decide func(View) Plan, steps int) (map[string]int, string) {
	cat := newCatalog()
	for _, a := range s.apps {
		cat.apps[a.AppName] = a
	}
	launched := map[string]int{}
	holder := ""
	var tasks []simTask
	for step := range steps {
		tasks = slices.DeleteFunc(tasks, func(t simTask) bool { return t.ends <= step })
		v := View{Now: at(fmt.Sprint(step)), Connected: true, Jobs: cat, Running: map[string]map[int]task.Entry{},
			Executors: map[offers.ExecutorKey]bool{}, Agents: s.agents}
		used := map[string]offers.Resources{}
		for _, t := range tasks {
			used[t.agent] = used[t.agent].Add(t.use)
			k := offers.ExecutorKey{App: t.app, AgentID: t.agent}
			if !v.Executors[k] {
				v.Executors[k] = true
				used[t.agent] = used[t.agent].Add(execOf(s.apps[t.app]))
			}
		}
		for _, a := range s.agents {
			if free := a.Total.Sub(used[a.ID]); free.CPU > 0 && free.MemMB > 0 {
				v.Offers = append(v.Offers, offers.Offer{ID: "o-" + a.ID, AgentID: a.ID, Free: free})
			}
		}
		for i, j := range s.jobs {
			if j.arrives <= step {
				cat.jobs[j.cfg.JobName] = j.cfg
				if _, done := launched[j.cfg.JobName]; !done {
					v.Ready = append(v.Ready, &queue.Ready{Job: j.cfg.JobName, Count: 1, Since: at(fmt.Sprint(float64(j.arrives) + float64(i)/100))})
				}
			}
		}
		slices.SortFunc(v.Ready, queue.CompareReady)
		p := decide(v)
		if holder == "" && p.Reservation.Key != "" {
			holder = p.Reservation.Key[len("ready/"):]
		}
		for _, l := range p.Launches {
			j := s.jobs[slices.IndexFunc(s.jobs, func(j simJob) bool { return j.cfg.JobName == l.Request.Job })]
			launched[l.Request.Job] = step
			tasks = append(tasks, simTask{job: l.Request.Job, app: l.Request.App, agent: l.AgentID, use: l.Request.Task, ends: step + j.dur})
		}
	}
	return launched, holder
}

func execOf(a app.Config) offers.Resources {
	return offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}
}

// strictDecide is strict oldest-first: the same order, nothing launched
// after the first execution that does not fit (those that can never fit
// excepted, as in Decide).
func strictDecide(v View) Plan {
	d := &decider{v: v, plan: Plan{Waiting: map[string]queue.Wait{}}}
	d.classify(len(v.Ready))
	d.cluster = clusterOf(v.Agents, v.Offers)
	m := offers.NewMatcher(v.Offers, v.Executors)
	var launched []*cand
	for i := range d.cands {
		c := &d.cands[i]
		if d.neverFits(c) != nil {
			continue
		}
		if ok, _, _ := m.Place(c.requests()); !ok {
			break
		}
		launched = append(launched, c)
	}
	d.finish(m, launched)
	return d.plan
}

func TestReservationHolderNoLaterThanStrict(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	const steps = 80
	holders, backfilled := 0, 0
	for i := range 600 {
		s := randomSim(rng)
		ours, holder := s.run(Decide, steps)
		strict, _ := s.run(strictDecide, steps)
		if holder == "" {
			continue
		}
		holders++
		o, ok := ours[holder]
		st, sok := strict[holder]
		switch {
		case sok && !ok:
			t.Fatalf("sim %d: the holder %s launched at step %d under strict oldest-first, never with reservations", i, holder, st)
		case sok && o > st:
			t.Fatalf("sim %d: the holder %s launched at step %d, under strict oldest-first at %d", i, holder, o, st)
		}
		for job, step := range ours {
			if s2, ok := strict[job]; !ok || step < s2 {
				backfilled++
				break
			}
		}
	}
	if holders < 50 || backfilled < 10 {
		t.Fatalf("the simulation is too tame: %d runs had a reservation, %d backfilled anything", holders, backfilled)
	}
	t.Logf("%d runs with a reservation, %d with work launched earlier than under strict oldest-first", holders, backfilled)
}
