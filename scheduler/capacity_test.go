package scheduler

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// twoTeams is issue 39's two teams on one 2-CPU agent: pay triggers
// twelve jobs of payCPU (pay's executor adds 0.1), search has a 0.1-CPU
// job on a 5-second cron (0.15 with its executor). searchGuarantee, when
// not nil, is set on namespace search (what PUT /api/namespaces writes).
func twoTeams(t *testing.T, searchGuarantee *namespace.Resources, payCPU float64) *rig {
	r := newRig(t)
	for _, ns := range []string{"pay", "search"} {
		rec := namespace.Record{Name: ns}
		if ns == "search" {
			rec.Guarantee = searchGuarantee
		}
		if _, err := r.reg.Tenancy().PutNamespace(r.ctx, rec); err != nil {
			t.Fatal(err)
		}
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "app", "http://example.invalid/app.tar.gz", "bin/start.sh", 0.1, 64
		if ns == "search" {
			a.CPUCount = 0.05
		}
		if err := r.reg.In(ns).Config().AddApp(r.ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	add := func(ns string, mod func(*jobs.Config)) {
		j := jobs.Default()
		j.AppName, j.ShardingTotalCount, j.MemoryMB = "app", 1, 64
		mod(&j)
		if err := r.reg.In(ns).Config().AddJob(r.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		add("pay", func(j *jobs.Config) { j.JobName, j.CPUCount = fmt.Sprintf("burst-%02d", i), payCPU })
	}
	add("search", func(j *jobs.Config) { j.JobName, j.CPUCount, j.Cron = "index", 0.1, "0/5 * * * * ?" })
	r.reload()
	r.agent(2, 4096)
	for i := range 12 {
		r.trigger(namespace.Key("pay", fmt.Sprintf("burst-%02d", i)))
	}
	r.sched.producer.RescheduleAll()
	return r
}

// launchedJobs are the jobs of the accept calls' launches from the given one.
func (r *rig) launchedJobs(from int) []string {
	r.drv.mu.Lock()
	defer r.drv.mu.Unlock()
	var out []string
	for _, a := range r.drv.accepts[from:] {
		for _, l := range a.launches {
			job, _, _ := strings.Cut(l.TaskID, "@-@")
			out = append(out, job)
		}
	}
	return out
}

func (r *rig) acceptCalls() int {
	r.drv.mu.Lock()
	defer r.drv.mu.Unlock()
	return len(r.drv.accepts)
}

// TestBurstDoesNotDelayAnotherTeamsFireInsideItsGuarantee: issue 39's
// burst (pay's 1.8-CPU runs on a 2-CPU cluster) with a guarantee of 0.2
// CPU on search: pay borrows the rest of the cluster but not what
// search's next fire needs, the fire at t0+5s launches in the round right
// after it while pay's work still waits, and pay goes on at its pace (one
// run at a time) as its runs end.
func TestBurstDoesNotDelayAnotherTeamsFireInsideItsGuarantee(t *testing.T) {
	r := twoTeams(t, &namespace.Resources{CPUCount: 0.2, MemoryMB: 256}, 1.7)
	if caps := r.sched.launcher.caps.get(r.ctx); caps["search"].Guarantee.CPU != 200 {
		t.Fatalf("capacities read %+v", caps)
	}
	r.offer("o1", 2, 4096)
	r.sched.launcher.round(r.ctx)
	if got := r.launchedJobs(0); len(got) != 1 || got[0] != "pay~burst-00" {
		t.Fatalf("first round launched %v, want pay's first burst job", got)
	}
	// What pay's launch left of the agent comes back as an offer; search
	// fires at t0+5s.
	r.offer("o2", 0.2, 4096-128)
	if got := r.fireSearch(); len(got) != 1 || got[0] != "search~index" {
		t.Fatalf("the round right after search's fire launched %v, want search~index (on time)", got)
	}
	if n := len(r.running("search~index")); n != 1 {
		t.Fatalf("search~index has %d running shards, want 1", n)
	}
	// pay's first run ends: its capacity goes to pay's next job, not
	// withheld for search (whose guarantee is in use).
	task := ""
	for _, e := range r.running("pay~burst-00") {
		task = e.TaskID
	}
	r.status(task, "TASK_FINISHED")
	r.offer("o3", 1.8, 4096-128)
	before := r.acceptCalls()
	r.sched.launcher.round(r.ctx)
	if got := r.launchedJobs(before); len(got) != 1 || got[0] != "pay~burst-01" {
		t.Fatalf("after pay's run ended the round launched %v, want pay~burst-01", got)
	}
}

// fireSearch advances the clock to search's fire at t0+5s, commits it
// and runs a round: the jobs it launched.
func (r *rig) fireSearch() []string {
	r.t.Helper()
	r.clk.Advance(5 * time.Second)
	r.sched.producer.fireDue(r.ctx)
	if r.readyCount("search~index") != 1 {
		r.t.Fatal("search's fire did not queue its execution")
	}
	before := r.acceptCalls()
	r.sched.launcher.round(r.ctx)
	return r.launchedJobs(before)
}

// TestGuaranteeKeepsTheFireOnTimeWhereABurstFillsTheCluster: pay's runs
// of 0.95 CPU fill the 2-CPU agent two at a time. Without a guarantee
// (the code before: one oldest-first queue) they take it all and
// search's fire waits for one of them to end; with 0.2 CPU guaranteed to
// search, pay runs one at a time (its work has no expected end, so it
// borrows nothing the fire needs) and the fire launches at once. The
// price is pay's second slot, which the guarantee keeps free.
func TestGuaranteeKeepsTheFireOnTimeWhereABurstFillsTheCluster(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("guarantee=%v", guarded), func(t *testing.T) {
			var g *namespace.Resources
			if guarded {
				g = &namespace.Resources{CPUCount: 0.2, MemoryMB: 256}
			}
			r := twoTeams(t, g, 0.95)
			r.offer("o1", 2, 4096)
			r.sched.launcher.round(r.ctx)
			pay := r.launchedJobs(0)
			if left := 2 - 0.1 - 0.95*float64(len(pay)); left > 0.01 {
				r.offer("o2", left, 2048) // what pay's launches left comes back
			}
			fire := r.fireSearch()
			switch {
			case !guarded && (len(pay) != 2 || len(fire) != 0):
				t.Fatalf("without a guarantee: pay launched %v, the round after the fire %v; want pay's two runs filling the agent and the fire waiting", pay, fire)
			case guarded && (len(pay) != 1 || len(fire) != 1 || fire[0] != "search~index"):
				t.Fatalf("with the guarantee: pay launched %v, the round after the fire %v; want one pay run and the fire on time", pay, fire)
			}
		})
	}
}

// TestCapacitiesFollowTheNamespaceRecords: a record's guarantee, limit and
// weight reach the rounds in their units, a record that sets nothing is
// left out, and a change binds after CapacityRefresh, or at once when the
// API tells of it.
func TestCapacitiesFollowTheNamespaceRecords(t *testing.T) {
	r := newRig(t)
	put := func(rec namespace.Record) {
		if _, err := r.reg.Tenancy().PutNamespace(r.ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	put(namespace.Record{Name: "plain"})
	put(namespace.Record{Name: "pay", Guarantee: &namespace.Resources{CPUCount: 1.5, MemoryMB: 512.5},
		Limit: &namespace.Resources{CPUCount: 4, MemoryMB: 8192}, Weight: 2})
	c := r.sched.launcher.caps
	m := c.get(r.ctx)
	want := round.Capacity{Guarantee: offersRes(1500, 513), Weight: 2}
	if len(m) != 1 || m["pay"].Guarantee != want.Guarantee || *m["pay"].Limit != offersRes(4000, 8192) || m["pay"].Weight != 2 {
		t.Fatalf("capacities %+v", m)
	}
	put(namespace.Record{Name: "plain", Weight: 3})
	if m := c.get(r.ctx); len(m) != 1 {
		t.Fatalf("a change bound before CapacityRefresh: %+v", m)
	}
	r.clk.Advance(CapacityRefresh)
	if m := c.get(r.ctx); len(m) != 2 || m["plain"].Weight != 3 || m["plain"].Limit != nil {
		t.Fatalf("after CapacityRefresh: %+v", m)
	}
	// The API tells of a change: it binds at the next round.
	put(namespace.Record{Name: "plain"})
	r.sched.CapacityChanged()
	if m := c.get(r.ctx); len(m) != 1 {
		t.Fatalf("after CapacityChanged: %+v", m)
	}
}

func offersRes(cpu offers.Milli, mem int64) offers.Resources {
	return offers.Resources{CPU: cpu, MemMB: mem}
}

// preemptionRig is a 2-CPU cluster shared by pay (no guarantee), whose
// preemptible crunch takes 1.8 CPU, and search, guaranteed 1 CPU, whose
// adhoc takes 0.5.
func preemptionRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	for _, ns := range []string{"pay", "search"} {
		rec := namespace.Record{Name: ns}
		if ns == "search" {
			rec.Guarantee = &namespace.Resources{CPUCount: 1, MemoryMB: 1024}
		}
		if _, err := r.reg.Tenancy().PutNamespace(r.ctx, rec); err != nil {
			t.Fatal(err)
		}
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "app", "http://example.invalid/app.tar.gz", "bin/start.sh", 0.1, 64
		if err := r.reg.In(ns).Config().AddApp(r.ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	add := func(ns, name string, cpu float64, preemptible bool) {
		j := jobs.Default()
		j.JobName, j.AppName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB, j.Preemptible = name, "app", 1, cpu, 64, preemptible
		if err := r.reg.In(ns).Config().AddJob(r.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	add("pay", "crunch", 1.8, true)
	add("search", "adhoc", 0.5, false)
	r.reload()
	r.agent(2, 4096)
	return r
}

// TestPreemptionGivesBorrowedCapacityBack: pay's preemptible run borrows
// the whole 2-CPU cluster (pay has no guarantee); search, guaranteed 1
// CPU, queues work: the round stops pay's run gracefully (a kill marked
// as a preemption), queues it again, and search's work launches once the
// capacity is back. The killed task is no failure, and pay's run queued
// again does not preempt in turn.
func TestPreemptionGivesBorrowedCapacityBack(t *testing.T) {
	r := preemptionRig(t)
	// pay's run is a cron fire's: queued again by the preemption, it still serves that instant
	instant := r.clk.Now()
	if _, err := r.reg.Work().TriggerFires(r.ctx, map[string]registry.CronFire{"pay~crunch": {Misfire: true, At: instant, Instant: instant}}, instant, nil); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 2, 4096)
	r.sched.launcher.round(r.ctx)
	var crunch string
	for _, e := range r.running("pay~crunch") {
		crunch = e.TaskID
	}
	if crunch == "" {
		t.Fatal("pay's run did not launch on the idle cluster")
	}
	r.status(crunch, "TASK_RUNNING")

	r.trigger("search~adhoc")
	r.sched.launcher.round(r.ctx)
	r.drv.mu.Lock()
	kills := slices.Clone(r.drv.kills)
	r.drv.mu.Unlock()
	if len(kills) != 1 || kills[0] != crunch {
		t.Fatalf("kills %v, want pay's borrowed run %s preempted", kills, crunch)
	}
	e := r.running("pay~crunch")[0]
	if !round.IsPreemption(e.KilledBy) || strings.Contains(e.KilledBy, "search") || !strings.Contains(e.KilledBy, round.OtherWork) { // read by pay's users
		t.Fatalf("the preempted task is marked %q", e.KilledBy)
	}
	if r.readyCount("pay~crunch") != 1 {
		t.Fatal("the preempted run was not queued again")
	}
	if rd, _, err := r.reg.Work().ReadyOf(r.ctx, "pay~crunch"); err != nil || !rd.FirstNominal().Equal(instant.UTC()) {
		t.Fatalf("the preempted run queued again serves %v (%v), want its fire's instant %v", rd.FirstNominal(), err, instant.UTC())
	}
	// A second round while the kill is under way preempts nothing more.
	r.sched.launcher.round(r.ctx)
	if n := len(r.drv.kills); n != 1 {
		t.Fatalf("%d kills after a second round, want 1 (no cascade)", n)
	}

	r.status(crunch, "TASK_KILLED")
	if n := len(r.running("pay~crunch")); n != 0 {
		t.Fatalf("pay~crunch still has %d running shards", n)
	}
	if fo, err := r.reg.Work().FailoverOf(r.ctx, "pay~crunch"); err != nil || len(fo) != 0 {
		t.Fatalf("the preempted task was taken for a failure: failover %v, %v", fo, err)
	}
	r.offer("o2", 2, 4096)
	before := r.acceptCalls()
	r.sched.launcher.round(r.ctx)
	if got := r.launchedJobs(before); len(got) != 1 || got[0] != "search~adhoc" {
		t.Fatalf("after the preemption the round launched %v, want search~adhoc", got)
	}
	r.sched.launcher.round(r.ctx)
	if n := len(r.drv.kills); n != 1 {
		t.Fatalf("pay's run, queued again, preempted in turn: %d kills", n)
	}
}

// TestPreemptedTriggerKeepsItsKeyAndParameter: a run an API trigger
// queued with an idempotency key and a parameter, preempted, is queued
// again as that trigger's run: it launches again with the parameter and
// under the key (whose record follows the run), and the key, already
// seen, does not make the queueing a duplicate that queues nothing.
func TestPreemptedTriggerKeepsItsKeyAndParameter(t *testing.T) {
	r := preemptionRig(t)
	const key, param = "nightly-2026-11-28", "day=2026-11-28"
	run := queue.PendingRun{JobParameter: param, IdempotencyKey: key, By: "api:alice"}
	if dup, err := r.reg.Work().TriggerRun(r.ctx, "pay~crunch", run, r.clk.Now()); err != nil || dup {
		t.Fatalf("trigger: duplicate %v, %v", dup, err)
	}
	// The registry stores the key under the job's namespace.
	stored := "pay~" + key
	r.offer("o1", 2, 4096)
	r.sched.launcher.round(r.ctx)
	carries := func(when string) string {
		t.Helper()
		var id string
		for _, e := range r.running("pay~crunch") {
			if e.Parameter == nil || *e.Parameter != param || e.RunKey != stored {
				t.Fatalf("%s: the run's shard carries parameter %v and key %q, want %q and %q", when, e.Parameter, e.RunKey, param, stored)
			}
			id = e.TaskID
		}
		if id == "" {
			t.Fatalf("%s: pay's run is not running", when)
		}
		return id
	}
	crunch := carries("the trigger's launch")
	r.status(crunch, "TASK_RUNNING")

	r.trigger("search~adhoc")
	r.sched.launcher.round(r.ctx)
	if len(r.drv.kills) != 1 {
		t.Fatalf("kills %v, want pay's borrowed run preempted", r.drv.kills)
	}
	rd, _, err := r.reg.Work().ReadyOf(r.ctx, "pay~crunch")
	if err != nil || rd.Count != 1 {
		t.Fatalf("the preempted run queued again: %+v, %v; want one execution", rd, err)
	}
	if first := rd.First(); first == nil || first.JobParameter != param || first.IdempotencyKey != stored {
		t.Fatalf("the preempted run queued again as %+v, want the trigger's parameter %q and key %q", first, param, stored)
	}

	r.status(crunch, "TASK_KILLED")
	r.offer("o2", 2, 4096)
	r.sched.launcher.round(r.ctx)
	for _, e := range r.running("search~adhoc") {
		r.status(e.TaskID, "TASK_RUNNING")
		r.status(e.TaskID, "TASK_FINISHED")
	}
	r.offer("o3", 2, 4096)
	r.sched.launcher.round(r.ctx)
	carries("its launch after the preemption")
}

// TestGuaranteesAboveTheClusterWarnOnce: the warning comes when the
// guarantees outgrow the cluster, once, and again only after they fit
// in between.
func TestGuaranteesAboveTheClusterWarnOnce(t *testing.T) {
	var buf bytes.Buffer
	c := &capacities{log: slog.New(slog.NewTextHandler(&buf, nil))}
	agents := []round.Agent{{ID: "a", Total: offersRes(2000, 4096)}}
	caps := map[string]round.Capacity{"pay": {Guarantee: offersRes(1500, 1024)}, "search": {Guarantee: offersRes(1000, 1024)}}
	c.checkCluster(caps, agents)
	c.checkCluster(caps, agents)
	if n := strings.Count(buf.String(), "more than the cluster"); n != 1 {
		t.Fatalf("%d warnings, want 1: %s", n, buf.String())
	}
	c.checkCluster(map[string]round.Capacity{"pay": {Guarantee: offersRes(1500, 1024)}}, agents)
	c.checkCluster(caps, agents)
	if n := strings.Count(buf.String(), "more than the cluster"); n != 2 {
		t.Fatalf("%d warnings, want 2: %s", n, buf.String())
	}
}
