package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
)

// TestStagedFireIsProtected: a cron fire the producer staged ahead of its
// instant (a ready entry held until then) is its job's next fire for the
// guarantees: listed once, at its instant, with its need, and the
// producer's following fire of that job left out; other jobs' fires are
// the producer's. Before, the staged fire was in neither list, and a
// borrower took the guaranteed space in the second before it.
func TestStagedFireIsProtected(t *testing.T) {
	r := twoTeams(t, &namespace.Resources{CPUCount: 0.2, MemoryMB: 256}, 0.95)
	l := r.sched.launcher
	now := r.clk.Now()
	index := namespace.Key("search", "index")
	l.nextFires = func(until time.Time, keep func(string) bool) []round.Fire {
		var out []round.Fire
		for _, f := range []round.Fire{{Job: index, At: now.Add(10 * time.Second)}, {Job: namespace.Key("search", "other"), At: now.Add(3 * time.Second)}} {
			if keep(f.Job) {
				out = append(out, f)
			}
		}
		return out
	}
	caps := l.caps.get(r.ctx)
	staged := []*queue.Ready{{Job: index, Count: 1, Since: now.Add(500 * time.Millisecond), NotBefore: now.Add(500 * time.Millisecond)}}
	got := l.fires(now, caps, staged)
	if len(got) != 1 || got[0].Job != index || !got[0].At.Equal(now.Add(500*time.Millisecond)) || got[0].Need.CPU != 150 {
		t.Fatalf("fires with index's fire staged: %+v; want index's staged fire alone (search~other is not a job), needing 0.15 CPU", got)
	}
	// staged into an entry that had an execution pending: no NotBefore of its own, its
	// next execution's instant (round.StagedUntil) is when it comes
	joined := []*queue.Ready{{Job: index, Count: 1, Since: now.Add(-time.Second), Nominal: []queue.NominalRun{{At: now.Add(700 * time.Millisecond), N: 1}}}}
	if got := l.fires(now, caps, joined); len(got) != 1 || got[0].Job != index || !got[0].At.Equal(now.Add(700*time.Millisecond)) {
		t.Fatalf("fires with index's fire staged into a pending entry: %+v; want it at its instant", got)
	}
	if got := l.fires(now, caps, nil); len(got) != 1 || !got[0].At.Equal(now.Add(10*time.Second)) {
		t.Fatalf("fires with nothing staged: %+v; want the producer's", got)
	}
}

// TestFiresOfAClusterGuarantee: a namespace guaranteed capacity on one cluster only has
// its fires listed for the round, which keeps that cluster's guarantee for them as it
// keeps a global one; a namespace with a limit there and no guarantee has none listed.
func TestFiresOfAClusterGuarantee(t *testing.T) {
	r := twoTeams(t, nil, 0.95)
	l := r.sched.launcher
	now := r.clk.Now()
	index := namespace.Key("search", "index")
	l.nextFires = func(until time.Time, keep func(string) bool) []round.Fire {
		var out []round.Fire
		if keep(index) {
			out = append(out, round.Fire{Job: index, At: now.Add(10 * time.Second)})
		}
		return out
	}
	one := offers.Resources{CPU: offers.CPUs(1), MemMB: 512}
	caps := map[string]round.Capacity{"search": {PerCluster: map[string]round.ClusterCap{"k8s": {Guarantee: one}}}}
	if got := l.fires(now, caps, nil); len(got) != 1 || got[0].Job != index {
		t.Fatalf("fires with search guaranteed 1 CPU on k8s only: %+v; want its job's next fire", got)
	}
	caps = map[string]round.Capacity{"search": {PerCluster: map[string]round.ClusterCap{"k8s": {Limit: &one}}}}
	if got := l.fires(now, caps, nil); len(got) != 0 {
		t.Fatalf("fires with search limited on k8s, guaranteed nothing: %+v; want none", got)
	}
}
