package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// gateDriver is a fakeDriver whose ACCEPTs may run together
// (engine.Capabilities.Accepts): each waits until `together` of them are in
// flight at once (or its context ends), and the one for failAgent fails.
type gateDriver struct {
	*fakeDriver
	together  int
	failAgent string
	mu        sync.Mutex
	inFlight  int
	most      int
	all       chan struct{} // closed once `together` were in flight at once
}

func (d *gateDriver) Capabilities() engine.Capabilities {
	return engine.Capabilities{ExecutorSharing: true, Accepts: d.together}
}

func (d *gateDriver) Accept(ctx context.Context, ids []string, l []engine.TaskLaunch, refuse time.Duration) error {
	d.mu.Lock()
	d.inFlight++
	d.most = max(d.most, d.inFlight)
	if d.inFlight == d.together {
		close(d.all)
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
	}()
	select {
	case <-d.all:
	case <-ctx.Done():
		return ctx.Err()
	}
	if len(l) > 0 && l[0].AgentID == d.failAgent {
		return errors.New("agent gone")
	}
	return d.fakeDriver.Accept(ctx, ids, l, refuse)
}

// TestAcceptsGoTogether: a round's ACCEPTs (one per agent) are in flight
// together when the engine takes them so, and each agent's result is
// handled as before: the launches of the agent whose ACCEPT failed are
// rolled back and queued again, the others stay launched and counted;
// the offer the round did not use is declined beside them.
func TestAcceptsGoTogether(t *testing.T) {
	r := newRig(t)
	gd := &gateDriver{fakeDriver: r.drv, together: 4, failAgent: "agent-3", all: make(chan struct{})}
	r.rebuild(func(d *Deps) { d.Driver = Guard(gd, func() error { return nil }) })
	r.addApp("app", 1, 128)
	var agents []engine.Agent
	for i := range 4 {
		agent := fmt.Sprintf("agent-%d", i)
		agents = append(agents, engine.Agent{ID: agent, Hostname: agent, CPUs: 2, MemMB: 1024})
		o := engine.Offer{ID: fmt.Sprintf("o%d", i), AgentID: agent, Hostname: agent, CPUs: 2, MemMB: 1024}
		r.sched.st.offers[o.ID] = o
		r.sched.st.noteOffers([]engine.Offer{o})
	}
	small := engine.Offer{ID: "o-small", AgentID: "agent-9", Hostname: "agent-9", CPUs: 0.1, MemMB: 16} // fits nothing: declined
	r.sched.st.offers[small.ID] = small
	r.sched.st.noteOffers([]engine.Offer{small})
	r.sched.st.agents = append(agents, engine.Agent{ID: "agent-9", Hostname: "agent-9", CPUs: 0.1, MemMB: 16})
	for i := range 4 { // one job per agent: 1 CPU of executor and 1 of shard fill it
		r.addJob(func(j *jobs.Config) { j.JobName, j.CPUCount, j.ShardingTotalCount = fmt.Sprintf("job%d", i), 1, 1 })
		r.trigger(fmt.Sprintf("job%d", i))
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second) // a bound, never reached when the ACCEPTs go together
	defer cancel()
	r.sched.launcher.round(ctx)
	if ctx.Err() != nil || gd.most != 4 {
		t.Fatalf("at most %d ACCEPTs were in flight together, want 4 (err %v)", gd.most, ctx.Err())
	}
	launched, requeued := 0, 0
	for i := range 4 {
		job := fmt.Sprintf("job%d", i)
		switch {
		case len(r.running(job)) == 1 && r.readyCount(job) == 0:
			launched++
		case len(r.running(job)) == 0 && r.readyCount(job) == 1:
			requeued++
		default:
			t.Fatalf("%s: running %v, ready %d", job, r.running(job), r.readyCount(job))
		}
	}
	if launched != 3 || requeued != 1 || len(r.drv.accepts) != 3 {
		t.Fatalf("launched %d, queued again %d, ACCEPTs that succeeded %d; want 3, 1, 3", launched, requeued, len(r.drv.accepts))
	}
	if len(r.drv.declines) != 1 || len(r.drv.declines[0].offers) != 1 || r.drv.declines[0].offers[0] != "o-small" {
		t.Fatalf("declines = %+v, want the unused offer declined with the ACCEPTs", r.drv.declines)
	}
	if _, held := r.sched.st.offers["o-small"]; held || len(r.sched.st.offers) != 0 {
		t.Fatalf("offers still held: %v", r.sched.st.offers)
	}
	for _, a := range r.drv.accepts {
		if a.launches[0].AgentID == "agent-3" {
			t.Fatal("the failed agent's ACCEPT was recorded")
		}
	}
}

// TestAcceptsOneAtATimeByDefault: an engine that does not declare
// concurrent ACCEPTs (the Kubernetes engine, test drivers) gets them one
// after another; Guard passes on what the engine declares.
func TestAcceptsOneAtATimeByDefault(t *testing.T) {
	if n := newFakeDriver().Capabilities().InFlight(); n != 1 {
		t.Fatalf("Accepts = %d, want 1", n)
	}
	if n := Guard(&gateDriver{together: 8}, nil).Capabilities().InFlight(); n != 8 {
		t.Fatalf("guarded Accepts = %d, want 8 (passed on)", n)
	}
}

// laneDriver is a fakeDriver of two clusters (engine.Lanes): the "slow" one takes one
// ACCEPT at a time, whose call ends only once the "fast" one's two ACCEPTs were in flight
// together (or its context ends); together its Capabilities take the fewest, one.
type laneDriver struct {
	*fakeDriver
	mu         sync.Mutex
	fast, slow int           // ACCEPTs in flight per lane
	mostSlow   int           // the most of the slow lane's in flight at once
	fastBoth   chan struct{} // closed once both of the fast lane's were in flight together
}

func (d *laneDriver) Capabilities() engine.Capabilities {
	return engine.Capabilities{ExecutorSharing: true, Accepts: 1}
}

func (d *laneDriver) Lane(agentID string) (string, int) {
	if strings.HasPrefix(agentID, "slow") {
		return "slow", 1
	}
	return "fast", 2
}

func (d *laneDriver) Accept(ctx context.Context, ids []string, l []engine.TaskLaunch, refuse time.Duration) error {
	slow := strings.HasPrefix(l[0].AgentID, "slow")
	d.mu.Lock()
	if slow {
		d.slow++
		d.mostSlow = max(d.mostSlow, d.slow)
	} else if d.fast++; d.fast == 2 {
		close(d.fastBoth)
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if slow {
			d.slow--
		} else {
			d.fast--
		}
		d.mu.Unlock()
	}()
	select {
	case <-d.fastBoth:
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.fakeDriver.Accept(ctx, ids, l, refuse)
}

// TestAcceptLanesGoApart: beside a cluster that takes one ACCEPT at a time and is slow
// to launch, another cluster's ACCEPTs go as many in flight as it takes (its lane), not
// one at a time behind the slow one's; the slow lane keeps to its one.
func TestAcceptLanesGoApart(t *testing.T) {
	r := newRig(t)
	ld := &laneDriver{fakeDriver: r.drv, fastBoth: make(chan struct{})}
	r.rebuild(func(d *Deps) { d.Driver = Guard(ld, func() error { return nil }) })
	r.addApp("app", 1, 128)
	var agents []engine.Agent
	for i, agent := range []string{"slow-0", "slow-1", "fast-0", "fast-1"} {
		agents = append(agents, engine.Agent{ID: agent, Hostname: agent, CPUs: 2, MemMB: 1024})
		o := engine.Offer{ID: fmt.Sprintf("o%d", i), AgentID: agent, Hostname: agent, CPUs: 2, MemMB: 1024}
		r.sched.st.offers[o.ID] = o
		r.sched.st.noteOffers([]engine.Offer{o})
	}
	r.sched.st.agents = agents
	for i := range 4 { // one job per agent: 1 CPU of executor and 1 of shard fill it
		r.addJob(func(j *jobs.Config) { j.JobName, j.CPUCount, j.ShardingTotalCount = fmt.Sprintf("job%d", i), 1, 1 })
		r.trigger(fmt.Sprintf("job%d", i))
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second) // a bound, never reached when the lanes go apart
	defer cancel()
	r.sched.launcher.round(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the fast lane's two ACCEPTs were never in flight together: %v", ctx.Err())
	}
	if ld.mostSlow != 1 {
		t.Fatalf("the slow lane had %d ACCEPTs in flight together, want 1", ld.mostSlow)
	}
	if len(r.drv.accepts) != 4 {
		t.Fatalf("ACCEPTs that succeeded: %d, want 4", len(r.drv.accepts))
	}
	for i := range 4 {
		if job := fmt.Sprintf("job%d", i); len(r.running(job)) != 1 {
			t.Fatalf("%s: running %v", job, r.running(job))
		}
	}
}
