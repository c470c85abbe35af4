package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// TestNextFireAtCountsAFireBeingStaged: once the producer takes a fire
// from its heap to stage it (lead ahead of its instant), and until that
// instant, NextFireAt still says that instant. Before, it said the job's
// following fire (5 s on) while the fire's commit was under way, and a
// launch round whose queue read came before the commit filtered what it
// declined for the full idle filter: the fire waited ~5 s for offers
// (issue 52, whole-guarantee scenario).
func TestNextFireAtCountsAFireBeingStaged(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.addJob(func(j *jobs.Config) { j.JobName, j.Cron, j.ShardingTotalCount = "core", "0/5 * * * * ?", 1 })
	p := r.sched.producer
	p.RescheduleAll()
	instant := t0.Add(5 * time.Second)
	if at, ok := p.NextFireAt(); !ok || !at.Equal(instant) {
		t.Fatalf("NextFireAt = %v %v, want %v", at, ok, instant)
	}
	r.clk.Set(instant.Add(-time.Second))
	due := p.popDue(r.clk.Now(), time.Second) // taken to be staged; its commit not done yet
	if len(due) != 1 || !due[0].At.Equal(instant) {
		t.Fatalf("due %+v, want core's fire at %v", due, instant)
	}
	if at, ok := p.NextFireAt(); !ok || !at.Equal(instant) {
		t.Fatalf("NextFireAt while the fire is staged = %v %v, want its instant %v", at, ok, instant)
	}
	// A launch round in that window declines for no longer than until the instant.
	if got := r.sched.launcher.refuseBefore(r.clk.Now(), time.Time{}, 5*time.Second); got != time.Second {
		t.Fatalf("decline filter while the fire is staged: %s, want 1s (until its instant)", got)
	}
	r.clk.Set(instant)
	if at, ok := p.NextFireAt(); ok {
		// The heap gets core's next fire when the commit is done (not in this test).
		t.Fatalf("NextFireAt at the instant = %v, want none: the staged instant has come", at)
	}
}

// TestReviveWhenAFilterHoldsBackWhatWorkNeeds replays the sequence on
// injected time: a round declines the agent's free pool for the idle
// filter (5 s) without seeing a fire (nothing due, no fire known: a round
// that read the queues before the fire's commit); the fire's entry is then
// due, no offer comes (the engine filters the pool), and by the running
// tasks' count it fits. The launcher revives, once, and launches on the
// offer that follows, not 5 s later.
func TestReviveWhenAFilterHoldsBackWhatWorkNeeds(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.addJob(func(j *jobs.Config) { j.JobName, j.CPUCount, j.ShardingTotalCount = "core", 0.5, 1 })
	r.addJob(func(j *jobs.Config) { j.JobName, j.CPUCount, j.ShardingTotalCount = "other", 0.5, 1 })
	r.agent(2, 4096)
	l := r.sched.launcher
	l.nextFireAt = func() (time.Time, bool) { return time.Time{}, false }

	// Round 1: other launches, and an offer of a second agent is declined
	// with the idle filter (nothing else waits, no fire known).
	r.trigger("other")
	r.offer("o1", 1, 1024)
	r.sched.st.offers["o2"] = engineOffer("o2", "agent-2", 1, 1024)
	r.sched.st.agents = append(r.sched.st.agents, agentOf("agent-2", 1, 1024))
	l.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.drv.declines) != 1 || r.drv.declines[0].refuse != 5*time.Second {
		t.Fatalf("round 1: accepts %d declines %+v; want other launched and o2 declined for 5s", len(r.drv.accepts), r.drv.declines)
	}
	// Round 2, 20 ms later: core's fire is due; nothing is offered (the
	// filter stands), and it fits what is free by count: revive.
	r.clk.Advance(20 * time.Millisecond)
	r.trigger("core")
	l.round(r.ctx)
	if r.drv.revive != 1 || len(r.drv.accepts) != 1 {
		t.Fatalf("round 2: revives %d accepts %d; want one REVIVE and no launch yet", r.drv.revive, len(r.drv.accepts))
	}
	// Round 3, before an offer: no second REVIVE (the filters are gone).
	l.round(r.ctx)
	if r.drv.revive != 1 {
		t.Fatalf("round 3: revives %d, want still 1", r.drv.revive)
	}
	// The engine offers what the REVIVE freed: core launches.
	r.sched.st.offers["o3"] = engineOffer("o3", "agent-2", 1, 1024)
	l.round(r.ctx)
	if len(r.drv.accepts) != 2 {
		t.Fatalf("accepts %d after the offer, want core's launch", len(r.drv.accepts))
	}
}

// TestNoReviveWithoutAFilter: work waiting for an offer while none of our
// decline filters can stand (they lapsed, or none was asked for) does not
// revive: the engine has its offer on the way.
func TestNoReviveWithoutAFilter(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.addJob(func(j *jobs.Config) { j.JobName, j.CPUCount, j.ShardingTotalCount = "core", 0.5, 1 })
	r.agent(2, 4096)
	l := r.sched.launcher
	l.nextFireAt = func() (time.Time, bool) { return time.Time{}, false }
	r.sched.st.filtersUntil = r.clk.Now().Add(-time.Millisecond) // lapsed
	r.trigger("core")
	l.round(r.ctx)
	if r.drv.revive != 0 {
		t.Fatalf("revives %d, want none", r.drv.revive)
	}
}

// TestIdleDeclineLapsesByTheNextFire: the decline of the held offers when
// nothing waits is shortened like the others, in case SUPPRESS fails.
func TestIdleDeclineLapsesByTheNextFire(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.agent(2, 4096)
	l := r.sched.launcher
	l.nextFireAt = func() (time.Time, bool) { return r.clk.Now().Add(1500 * time.Millisecond), true }
	r.offer("o1", 2, 4096)
	l.round(r.ctx)
	if len(r.drv.declines) != 1 || r.drv.declines[0].refuse != 1500*time.Millisecond || r.drv.suppress != 1 {
		t.Fatalf("declines %+v suppress %d; want o1 declined until the fire (1.5s) and a SUPPRESS", r.drv.declines, r.drv.suppress)
	}
}

func engineOffer(id, agent string, cpus, mem float64) engine.Offer {
	return engine.Offer{ID: id, AgentID: agent, Hostname: agent, CPUs: cpus, MemMB: mem}
}

func agentOf(id string, cpus, mem float64) engine.Agent {
	return engine.Agent{ID: id, Hostname: id, CPUs: cpus, MemMB: mem}
}

// TestNextFiresCountsAFireBeingStaged: between taking a fire from the heap
// and its commit, the guarantees' next fires still list it (at its
// instant, the job's following fire left out), so no round in that window
// lends its space to a run that would outlast it.
func TestNextFiresCountsAFireBeingStaged(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 64)
	r.addJob(func(j *jobs.Config) { j.JobName, j.Cron, j.ShardingTotalCount = "core", "0/5 * * * * ?", 1 })
	p := r.sched.producer
	p.RescheduleAll()
	instant := t0.Add(5 * time.Second)
	r.clk.Set(instant.Add(-time.Second))
	if due := p.popDue(r.clk.Now(), time.Second); len(due) != 1 {
		t.Fatalf("due %+v, want core's fire", due)
	}
	p.mu.Lock()
	p.scheduleLocked("core", instant) // as the commit does: the job's following fire
	p.mu.Unlock()
	all := func(string) bool { return true }
	if got := p.NextFires(instant.Add(time.Minute), all); len(got) != 1 || !got[0].At.Equal(instant) {
		t.Fatalf("NextFires while core's fire is staged = %+v, want it alone at %v", got, instant)
	}
	r.clk.Set(instant)
	if got := p.NextFires(instant.Add(time.Minute), all); len(got) != 1 || !got[0].At.Equal(instant.Add(5*time.Second)) {
		t.Fatalf("NextFires at the instant = %+v, want the following fire", got)
	}
}
