package round

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/offers"
)

// wholeGuarantee sets up BenchmarkRealRun's whole-guarantee scenario on s:
// core guaranteed 1 CPU fires a 0.95-CPU 2-s run every 5 s; b1 and b2 (no
// capacity) each trigger twelve 0.9-CPU 6-s runs.
func wholeGuarantee(s *teamSim) {
	s.caps["core"] = Capacity{Guarantee: offers.Resources{CPU: 1000, MemMB: 1024}}
	s.app("core~team", 0.05, 64)
	s.jobOf("core~team", "core~tick", 0.95, 64, 2*time.Second, false)
	for _, ns := range []string{"b1", "b2"} {
		s.app(ns+"~team", 0.05, 64)
		for i := range 12 {
			key := fmt.Sprintf("%s~burst-%02d", ns, i)
			s.jobOf(ns+"~team", key, 0.9, 64, 6*time.Second, false)
			s.trigger(key)
		}
	}
}

// wholeGuaranteeLate plays wholeGuarantee for 150 s and returns core's
// fires' lateness while b1 and b2 have work.
func wholeGuaranteeLate(s *teamSim) []time.Duration {
	wholeGuarantee(s)
	var done time.Duration
	late := cronLate(s, "core~tick", 5*time.Second, 150*time.Second, func() {
		if done == 0 && !s.nsLeft("b1") && !s.nsLeft("b2") {
			done = s.now.Sub(t0)
		}
	})
	return firesWithin(late, 5*time.Second, done)
}

// TestStagingWindowMadeFiresLate replays issue 52's open case in virtual
// time with the engine modelled (decline filters, SUPPRESS/REVIVE: see
// simEngine) and fires staged 1 s ahead, each commit taking 100–500 ms:
// while a fire was taken and not committed it was in neither the queue
// nor the producer's next fires, so a round in that window lent its space
// to a 6-s run (and filtered what it declined as if the fire were 5 s
// on), and the fire started up to 5 s late. With the producer counting
// the fires it staged (and the launcher's REVIVE when a filter holds back
// what due work needs), every fire starts within a round (100 ms).
func TestStagingWindowMadeFiresLate(t *testing.T) {
	for _, lag := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond} {
		worst := func(fixed bool) time.Duration {
			s := twoCPUSim()
			s.eng, s.lead, s.commitLag, s.stagedCounts = newSimEngine(fixed), time.Second, lag, fixed
			late := wholeGuaranteeLate(s)
			if len(late) < 20 {
				t.Fatalf("commit %v: %d fires counted, want the burst's ≥ 20", lag, len(late))
			}
			return quantile(late, 1)
		}
		if before := worst(false); before <= time.Second {
			t.Errorf("commit %v: the code before's worst fire %v late; the model should show it over 1 s", lag, before)
		}
		if after := worst(true); after > 100*time.Millisecond {
			t.Errorf("commit %v: worst fire %v late, want within a round (100 ms)", lag, after)
		}
	}
}
