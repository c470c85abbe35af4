package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
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
