package round

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// teamSim runs launch rounds over simulated time: agents with totals, jobs
// whose runs last a set time, a ready queue, Decide every step, its
// launches started, its preemptions carried out (the run queued again).
// It is the scheduler's loop with the engine and the clock made up.
type teamSim struct {
	now       time.Time
	agents    []Agent
	cat       *catalog
	caps      map[string]Capacity
	running   map[string]map[int]task.Entry
	ends      map[string]time.Time // job → when its run ends
	dur       map[string]time.Duration
	ready     map[string]*queue.Ready
	fires     []Fire
	typical   map[string]estimate.Typical
	held      map[string]time.Duration // namespace → CPU·seconds held (shares)
	heldMem   map[string]float64       // namespace → MB·seconds
	preempted []Preemption
	onLaunch  func(s *teamSim, l Launch)
	afterPlan func(s *teamSim, p Plan)
	// execs are the apps' executors up, each with when it last ran a
	// task: one starts with its app's first task on an agent and exits
	// execIdle after its last (executor_idle_timeout), holding its app's
	// resources until then, idle too, as on the embedded engine.
	execs    map[offers.ExecutorKey]time.Time
	execIdle time.Duration
	// eng, when set, stands between the rounds and the free pools: decline
	// filters, SUPPRESS and REVIVE (engine_sim_test.go).
	eng *simEngine
	// lead stages cronLate's fires this far ahead of their instant (the
	// producer's fire_lead), committed commitLag after being taken; with
	// stagedCounts the producer's next fire counts a fire taken and not
	// yet due (issue 52's fix), else it skips to the fire after.
	lead, commitLag time.Duration
	stagedCounts    bool
}

func newTeamSim() *teamSim {
	return &teamSim{now: t0, cat: newCatalog(), caps: map[string]Capacity{}, running: map[string]map[int]task.Entry{},
		ends: map[string]time.Time{}, dur: map[string]time.Duration{}, ready: map[string]*queue.Ready{},
		typical: map[string]estimate.Typical{}, held: map[string]time.Duration{}, heldMem: map[string]float64{},
		execs: map[offers.ExecutorKey]time.Time{}, execIdle: 10 * time.Second}
}

func (s *teamSim) job(key string, cpu, mem float64, d time.Duration, preemptible bool) {
	s.cat.apps["demo"] = app.Config{AppName: "demo"}
	s.jobOf("demo", key, cpu, mem, d, preemptible)
}

// app registers an app whose executor holds cpu and mem.
func (s *teamSim) app(name string, cpu, mem float64) {
	s.cat.apps[name] = app.Config{AppName: name, CPUCount: cpu, MemoryMB: mem}
}

// jobOf registers a one-shard job of app that runs for d.
func (s *teamSim) jobOf(appName, key string, cpu, mem float64, d time.Duration, preemptible bool) {
	s.cat.jobs[key] = jobs.Config{JobName: key, AppName: appName, ShardingTotalCount: 1, CPUCount: cpu, MemoryMB: mem,
		JobExecutionType: jobs.Transient, Preemptible: preemptible}
	s.dur[key] = d
	s.typical[key] = estimate.Typical{Runs: 10, P90: d, Known: true}
}

func (s *teamSim) trigger(key string) {
	if _, ok := s.ready[key]; !ok {
		s.ready[key] = &queue.Ready{Job: key, Count: 1, Since: s.now}
	}
}

// free is what each agent has free: its total less the running tasks and
// the executors up.
func (s *teamSim) free() []offers.Offer {
	used := map[string]offers.Resources{}
	for job, shards := range s.running {
		j := s.cat.jobs[job]
		for _, e := range shards {
			used[e.AgentID] = used[e.AgentID].Add(offers.Resources{CPU: offers.CPUs(j.CPUCount), MemMB: offers.MemMB(j.MemoryMB)})
		}
	}
	for k := range s.execs {
		a := s.cat.apps[k.App]
		used[k.AgentID] = used[k.AgentID].Add(offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)})
	}
	var out []offers.Offer
	for _, a := range s.agents {
		f := a.Total.Sub(used[a.ID])
		if f.CPU > 0 && f.MemMB > 0 {
			out = append(out, offers.Offer{ID: "o-" + a.ID, AgentID: a.ID, Free: f})
		}
	}
	return out
}

// step advances one second: runs that ended end, a round decides, its
// launches start, its preemptions end their runs (queued again).
func (s *teamSim) step(dt time.Duration) Plan {
	for job, end := range s.ends {
		if !end.After(s.now) {
			delete(s.running, job)
			delete(s.ends, job)
		}
	}
	s.executorsIdle()
	offered := s.free()
	if s.eng != nil {
		offered = s.eng.offer(s.now, offered)
	}
	v := View{Now: s.now, Connected: true, Jobs: s.cat, Running: s.running, Executors: map[offers.ExecutorKey]bool{},
		Agents: s.agents, Offers: offered, Namespaces: s.caps, Fires: s.fires, Typical: s.typical}
	for k := range s.execs {
		v.Executors[k] = true
	}
	for _, rd := range s.ready {
		v.Ready = append(v.Ready, rd)
	}
	slices.SortFunc(v.Ready, queue.CompareReady)
	p := Decide(v)
	if s.eng != nil {
		s.eng.apply(s.now, offered, p)
	}
	for _, l := range p.Launches {
		job := l.Request.Job
		if s.running[job] == nil {
			s.running[job] = map[int]task.Entry{}
		}
		s.running[job][l.Request.Shard] = task.Entry{TaskID: job + "-t", AgentID: l.AgentID, State: task.Running, LaunchedAt: s.now}
		s.ends[job] = s.now.Add(s.dur[job])
		s.execs[offers.ExecutorKey{App: l.Request.App, AgentID: l.AgentID}] = s.now
		delete(s.ready, job)
		if s.onLaunch != nil {
			s.onLaunch(s, l)
		}
	}
	for _, pr := range p.Preempt {
		delete(s.running, pr.Job)
		delete(s.ends, pr.Job)
		s.preempted = append(s.preempted, pr)
		s.trigger(pr.Job) // queued again (a misfire)
	}
	if s.afterPlan != nil {
		s.afterPlan(s, p)
	}
	for job, shards := range s.running {
		j := s.cat.jobs[job]
		ns := namespace.Of(job)
		s.held[ns] += time.Duration(float64(dt) * j.CPUCount * float64(len(shards)))
		s.heldMem[ns] += dt.Seconds() * j.MemoryMB * float64(len(shards))
	}
	for k := range s.execs {
		a := s.cat.apps[k.App]
		ns := namespace.Of(k.App)
		s.held[ns] += time.Duration(float64(dt) * a.CPUCount)
		s.heldMem[ns] += dt.Seconds() * a.MemoryMB
	}
	s.now = s.now.Add(dt)
	return p
}

// executorsIdle notes which executors run a task now, and ends those
// idle for execIdle.
func (s *teamSim) executorsIdle() {
	for job, shards := range s.running {
		app := s.cat.jobs[job].AppName
		for _, e := range shards {
			s.execs[offers.ExecutorKey{App: app, AgentID: e.AgentID}] = s.now
		}
	}
	for k, last := range s.execs {
		if s.now.Sub(last) >= s.execIdle {
			delete(s.execs, k)
		}
	}
}

// TestSharesConvergeToWeights: three namespaces with weights 1:1:2, no
// guarantee, every one backlogged (each run queues the next), on a
// 16-CPU cluster for 5 minutes: what each holds over time, its dominant
// share (c's jobs are memory-heavy), is within 10 % of its weight's.
func TestSharesConvergeToWeights(t *testing.T) {
	s := newTeamSim()
	s.agents = []Agent{{ID: "a1", Total: offers.Resources{CPU: 8000, MemMB: 32768}}, {ID: "a2", Total: offers.Resources{CPU: 8000, MemMB: 32768}}}
	rng := rand.New(rand.NewSource(1))
	weights := map[string]float64{"a": 1, "b": 1, "c": 2}
	for _, ns := range []string{"a", "b", "c"} {
		s.caps[ns] = Capacity{Weight: weights[ns]}
		for i := range 40 {
			key := fmt.Sprintf("%s~j%02d", ns, i)
			cpu, mem := 1.0, 512.0
			if ns == "c" {
				cpu, mem = 0.5, 4096 // dominant resource: memory
			}
			s.job(key, cpu, mem, time.Duration(3+rng.Intn(10))*time.Second, false)
			s.trigger(key)
		}
	}
	s.onLaunch = func(s *teamSim, l Launch) {} // the queue stays full: ended runs queue again below
	for range 300 {
		s.step(time.Second)
		for key := range s.cat.jobs {
			if _, run := s.running[key]; !run {
				s.trigger(key)
			}
		}
	}
	total := s.agents[0].Total.Add(s.agents[1].Total)
	var sum float64
	shares := map[string]float64{}
	for ns := range weights {
		cpu := s.held[ns].Seconds() / 300 / total.CPU.Cores()
		mem := s.heldMem[ns] / 300 / float64(total.MemMB)
		shares[ns] = math.Max(cpu, mem)
		sum += shares[ns]
	}
	for ns, w := range weights {
		got, want := shares[ns]/sum, w/4
		t.Logf("namespace %s: dominant share %.3f of the cluster, %.1f%% of the shares (weight %.0f: %.1f%%)", ns, shares[ns], 100*got, w, 100*want)
		if math.Abs(got-want)/want > 0.10 {
			t.Errorf("namespace %s holds %.1f%% of the shares, its weight %.1f%%: more than 10%% off", ns, 100*got, 100*want)
		}
	}
}

// TestGuaranteeGetsNextFreedCapacity: pay keeps the cluster full with
// work it borrows; search (a 2-CPU guarantee) queues work at random. In
// every round where search's waiting execution is within its guarantee
// and fits what is free, it launches: pay's backlog never takes the
// capacity that frees up first.
func TestGuaranteeGetsNextFreedCapacity(t *testing.T) {
	s := newTeamSim()
	s.agents = []Agent{{ID: "a1", Total: offers.Resources{CPU: 4000, MemMB: 16384}}, {ID: "a2", Total: offers.Resources{CPU: 4000, MemMB: 16384}}}
	s.caps["search"] = Capacity{Guarantee: offers.Resources{CPU: 2000, MemMB: 4096}}
	rng := rand.New(rand.NewSource(2))
	for i := range 60 {
		key := fmt.Sprintf("pay~j%02d", i)
		s.job(key, 0.5+float64(rng.Intn(3))/2, 256, time.Duration(2+rng.Intn(20))*time.Second, false)
		s.trigger(key)
	}
	for i := range 4 {
		s.job(fmt.Sprintf("search~s%d", i), 0.5, 128, time.Duration(1+rng.Intn(5))*time.Second, false)
	}
	launchedSearch, checked := 0, 0
	for range 600 {
		if rng.Intn(4) == 0 {
			s.trigger(fmt.Sprintf("search~s%d", rng.Intn(4)))
		}
		for key := range s.cat.jobs {
			if _, run := s.running[key]; !run && namespace.Of(key) == "pay" {
				s.trigger(key)
			}
		}
		// which search entries must launch this round
		free := s.free()
		used := usageOf(View{Running: s.running, Jobs: s.cat})["search"]
		must := map[string]bool{}
		for key, rd := range s.ready {
			j := s.cat.jobs[key]
			need := offers.Resources{CPU: offers.CPUs(j.CPUCount), MemMB: offers.MemMB(j.MemoryMB)}
			if namespace.Of(key) != "search" || len(s.running[key]) > 0 || !used.Add(need).Fits(s.caps["search"].Guarantee) {
				continue
			}
			m := offers.NewMatcher(free, nil)
			if ok, _, _ := m.Place([]offers.Request{{Job: key, Kind: offers.Ready, App: "demo", Task: need, Seq: rd.Since.UnixNano()}}); ok {
				must[key] = true
			}
		}
		if len(must) > 1 {
			must = map[string]bool{} // two compete: one may take what the other needs
		}
		p := s.step(time.Second)
		for key := range must {
			checked++
			if _, waits := p.Waiting[queue.WaitKey(false, key, 0)]; waits {
				t.Fatalf("%s: search's %s is within its guarantee and fits what is free, but waits: %+v", s.now, key, p.Waiting[queue.WaitKey(false, key, 0)])
			}
			launchedSearch++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d rounds where search's work fit what was free: the test exercised too little", checked)
	}
	t.Logf("%d rounds where search's guaranteed work fit what freed up; it launched in every one", launchedSearch)
}

// TestNoPreemptionCycles: two namespaces with a guarantee of half the
// cluster each, both with preemptible work, bursts at random. Every
// preemption is for an entry within its guarantee; a run that was
// preempted and queued again never preempts in turn; and once both hold
// their guarantees, nothing is preempted.
func TestNoPreemptionCycles(t *testing.T) {
	s := newTeamSim()
	s.agents = []Agent{{ID: "a1", Total: offers.Resources{CPU: 4000, MemMB: 16384}}}
	for _, ns := range []string{"pay", "search"} {
		s.caps[ns] = Capacity{Guarantee: offers.Resources{CPU: 2000, MemMB: 8192}}
	}
	rng := rand.New(rand.NewSource(3))
	for _, ns := range []string{"pay", "search"} {
		for i := range 10 {
			s.job(fmt.Sprintf("%s~j%d", ns, i), 0.5+0.5*float64(rng.Intn(2)), 256, time.Duration(5+rng.Intn(60))*time.Second, true)
		}
	}
	victims := map[string]bool{}
	s.afterPlan = func(s *teamSim, p Plan) {
		for _, pr := range p.Preempt {
			if victims[pr.For[len("ready/"):]] {
				t.Fatalf("%s: %s, preempted before, now preempts %s: a cycle", s.now, pr.For, pr.Job)
			}
			if w := p.Waiting[pr.For]; !w.InGuarantee() {
				t.Fatalf("%s: preemption for %s, which is not within its guarantee", s.now, pr.For)
			}
			victims[pr.Job] = true
		}
	}
	for i := range 900 {
		if i < 600 && rng.Intn(3) == 0 { // bursts for 10 minutes, then every job of both queued
			ns := []string{"pay", "search"}[rng.Intn(2)]
			for range 1 + rng.Intn(5) {
				s.trigger(fmt.Sprintf("%s~j%d", ns, rng.Intn(10)))
			}
		} else if i >= 600 {
			for key := range s.cat.jobs {
				if _, run := s.running[key]; !run {
					s.trigger(key)
				}
			}
		}
		before := len(s.preempted)
		s.step(time.Second)
		if i >= 700 && len(s.preempted) > before {
			t.Fatalf("%s: a preemption in the steady state (both namespaces backlogged): %+v", s.now, s.preempted[before:])
		}
	}
	if len(s.preempted) == 0 {
		t.Fatal("nothing was preempted: the test exercised nothing")
	}
	t.Logf("%d preemptions over 15 minutes, none in a cycle", len(s.preempted))
}
