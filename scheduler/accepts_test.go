package scheduler

import (
	"context"
	"errors"
	"fmt"
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
