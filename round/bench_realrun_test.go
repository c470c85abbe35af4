package round

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// The scenarios of cmd/ejbench/internal/teams (make bench -only teams) in virtual
// time, so the harness prints the simulation's figure beside the real
// run's: a 2-CPU agent, every app's executor 0.05 CPU and 64 MB, every
// task 64 MB, rounds every 100 ms.

// cronLate plays s for horizon, firing cron every period from t0+period
// (a fire while one waits folds into it), and returns each fire's
// lateness: its instant → the launch that serves it. each is called
// after every step.
func cronLate(s *teamSim, cron string, period, horizon time.Duration, each func()) []time.Duration {
	j := s.cat.jobs[cron]
	a := s.cat.apps[j.AppName]
	need := offers.Resources{CPU: offers.CPUs(j.CPUCount + a.CPUCount), MemMB: offers.MemMB(j.MemoryMB + a.MemoryMB)}
	next := t0.Add(period)
	var waiting []time.Time
	var late []time.Duration
	prev := s.onLaunch
	s.onLaunch = func(s *teamSim, l Launch) {
		if l.Request.Job == cron {
			for _, at := range waiting {
				late = append(late, s.now.Sub(at))
			}
			waiting = nil
		}
		if prev != nil {
			prev(s, l)
		}
	}
	// With s.lead: a fire is taken lead before its instant and committed
	// commitLag later, as a ready entry held until its instant; in between
	// it is in neither the queue nor the round's fires, and the producer's
	// next fire is the one after unless s.stagedCounts.
	popped := false
	var staged time.Time // the last committed staged instant
	if s.eng != nil {
		s.eng.nextFire = func(now time.Time) (time.Time, bool) {
			switch {
			case popped && s.stagedCounts:
				return next, true
			case popped:
				return next.Add(period), true
			case s.stagedCounts && staged.After(now):
				return staged, true
			}
			return next, true
		}
	}
	for s.now.Before(t0.Add(horizon)) {
		switch {
		case s.lead == 0 && !s.now.Before(next):
			waiting = append(waiting, next)
			s.trigger(cron)
			next = next.Add(period)
		case s.lead > 0 && !popped && !s.now.Before(next.Add(-s.lead)):
			popped = true
		}
		if popped && !s.now.Before(next.Add(s.commitLag-s.lead)) {
			popped, staged = false, next
			waiting = append(waiting, next)
			if _, ok := s.ready[cron]; !ok {
				s.ready[cron] = &queue.Ready{Job: cron, Count: 1, Since: next, NotBefore: next}
			}
			next = next.Add(period)
		}
		switch rd, ok := s.ready[cron]; {
		case ok && rd.NotBefore.After(s.now):
			s.fires = []Fire{{Job: cron, At: rd.NotBefore, Need: need}} // the staged fire (the launcher's fires)
		case popped && !s.stagedCounts:
			s.fires = []Fire{{Job: cron, At: next.Add(period), Need: need}} // taken, not committed: out of sight
		default:
			s.fires = []Fire{{Job: cron, At: next, Need: need}}
		}
		s.step(100 * time.Millisecond)
		if each != nil {
			each()
		}
	}
	return late
}

// nsLeft reports whether any job of namespace ns waits or runs.
func (s *teamSim) nsLeft(ns string) bool {
	for key := range s.ready {
		if len(key) > len(ns) && key[:len(ns)+1] == ns+"~" {
			return true
		}
	}
	for key := range s.running {
		if len(key) > len(ns) && key[:len(ns)+1] == ns+"~" {
			return true
		}
	}
	return false
}

func reportLate(b *testing.B, late []time.Duration) {
	over := 0
	for _, l := range late {
		if l > time.Second {
			over++
		}
	}
	b.ReportMetric(float64(quantile(late, .5).Milliseconds()), "late-p50-ms")
	b.ReportMetric(float64(quantile(late, .99).Milliseconds()), "late-p99-ms")
	b.ReportMetric(float64(quantile(late, 1).Milliseconds()), "late-max-ms")
	b.ReportMetric(float64(over), "late-over-1s")
	b.ReportMetric(float64(len(late)), "fires")
}

// realEngineSim is twoCPUSim with what the real run has between a fire and
// its launch beside the rounds: the engine's offers and decline filters
// (simEngine, with the launcher's policy), and the producer staging fires
// 1 s ahead (fire_lead), each commit taking 200 ms (a loaded 2-CPU
// machine's; the producer counts a fire it took as its job's next).
func realEngineSim() *teamSim {
	s := twoCPUSim()
	s.eng, s.lead, s.commitLag, s.stagedCounts = newSimEngine(true), time.Second, 200*time.Millisecond, true
	return s
}

func twoCPUSim() *teamSim {
	s := newTeamSim()
	s.agents = []Agent{{ID: "a1", Total: offers.Resources{CPU: 2000, MemMB: 8192}}}
	return s
}

// BenchmarkRealRun: the three scenarios of the real-run benchmark.
func BenchmarkRealRun(b *testing.B) {
	b.Run("two-team", func(b *testing.B) {
		var late []time.Duration
		var done time.Duration
		for b.Loop() {
			s := realEngineSim()
			limit := offers.Resources{CPU: 2000, MemMB: 4096}
			s.caps["pay"] = Capacity{Guarantee: offers.Resources{CPU: 1000, MemMB: 2048}, Limit: &limit}
			s.caps["search"] = Capacity{Guarantee: offers.Resources{CPU: 500, MemMB: 1024}}
			s.app("pay~team", 0.05, 64)
			s.app("search~team", 0.05, 64)
			s.jobOf("search~team", "search~index", 0.1, 64, 200*time.Millisecond, false)
			for i := range 12 {
				key := fmt.Sprintf("pay~burst-%02d", i)
				s.jobOf("pay~team", key, 0.9, 64, 6*time.Second, false)
				s.trigger(key)
			}
			done = 0
			late = cronLate(s, "search~index", 5*time.Second, 150*time.Second, func() {
				if done == 0 && !s.nsLeft("pay") {
					done = s.now.Sub(t0)
				}
			})
			late = firesWithin(late, 5*time.Second, done)
		}
		reportLate(b, late)
		b.ReportMetric(done.Seconds(), "pay-done-s")
	})
	b.Run("whole-guarantee", func(b *testing.B) {
		var late []time.Duration
		for b.Loop() {
			s := realEngineSim()
			late = wholeGuaranteeLate(s)
		}
		reportLate(b, late)
	})
	b.Run("weights", func(b *testing.B) {
		weights := map[string]float64{"w1": 1, "w2": 1, "w3": 2}
		var held map[string]time.Duration
		for b.Loop() {
			s := twoCPUSim()
			for ns, w := range weights {
				s.caps[ns] = Capacity{Weight: w}
				s.app(ns+"~team", 0.05, 64)
				for i := range 6 {
					s.jobOf(ns+"~team", fmt.Sprintf("%s~work-%d", ns, i), 0.3, 64, 2*time.Second, false)
				}
			}
			warm := 10 * time.Second
			for s.now.Before(t0.Add(warm + 300*time.Second)) {
				if s.now.Equal(t0.Add(warm)) {
					s.held = map[string]time.Duration{}
				}
				for key := range s.cat.jobs {
					if _, run := s.running[key]; !run {
						s.trigger(key)
					}
				}
				s.step(100 * time.Millisecond)
			}
			held = s.held
		}
		var total time.Duration
		for ns := range weights {
			held[ns] -= 15 * time.Second // its executor, up all along (0.05 CPU × 300 s): runs alone, as the real run counts
			total += held[ns]
		}
		for ns := range weights {
			b.ReportMetric(100*float64(held[ns])/float64(total), "share-"+ns)
		}
	})
}

// firesWithin keeps the lateness of the fires at or before until (the
// burst's end; the i-th fire is at (i+1)·period).
func firesWithin(late []time.Duration, period, until time.Duration) []time.Duration {
	if until == 0 {
		return late
	}
	n := int(until / period)
	return late[:min(n, len(late))]
}
