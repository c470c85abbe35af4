package round

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/offers"
)

// twoTeamBurst is issue 39's scenario over simulated time, in rounds of
// 100 ms: a 2-CPU cluster; pay triggers twelve runs of payCPU that last
// 8 s; search has a 0.15-CPU job (its shard and executor) that runs 1 s,
// fired every 5 s (a fire while one waits collapses into it, as without
// misfire). With guarantee, search is guaranteed 0.2 CPU; without, no
// namespace has a capacity (the code before's one oldest-first queue).
// It returns each fire's lateness (its instant to the launch that serves
// it) and when pay's last run ended.
func twoTeamBurst(payCPU float64, guarantee bool) (late []time.Duration, payDone time.Duration, payRuns int) {
	s := newTeamSim()
	s.agents = []Agent{{ID: "a1", Total: offers.Resources{CPU: 2000, MemMB: 8192}}}
	if guarantee {
		s.caps["search"] = Capacity{Guarantee: offers.Resources{CPU: 200, MemMB: 512}}
	}
	for i := range 12 {
		key := fmt.Sprintf("pay~burst-%02d", i)
		s.job(key, payCPU, 512, 8*time.Second, false)
		s.trigger(key)
	}
	s.job("search~index", 0.15, 128, time.Second, false)
	next := t0.Add(5 * time.Second)
	var waiting []time.Time // fires the queued execution serves
	s.onLaunch = func(s *teamSim, l Launch) {
		if l.Request.Job != "search~index" {
			payRuns++
		} else {
			for _, at := range waiting {
				late = append(late, s.now.Sub(at))
			}
			waiting = nil
		}
	}
	for s.now.Before(t0.Add(150 * time.Second)) {
		if !s.now.Before(next) {
			waiting = append(waiting, next)
			s.trigger("search~index")
			next = next.Add(5 * time.Second)
		}
		s.fires = []Fire{{Job: "search~index", At: next, Need: offers.Resources{CPU: 150, MemMB: 128}}}
		s.step(100 * time.Millisecond)
		if payDone == 0 && !s.payLeft() {
			payDone = s.now.Sub(t0)
		}
	}
	return late, payDone, payRuns
}

// payLeft reports whether any of pay's runs waits or runs.
func (s *teamSim) payLeft() bool {
	for key := range s.ready {
		if key[:4] == "pay~" {
			return true
		}
	}
	for key := range s.running {
		if key[:4] == "pay~" {
			return true
		}
	}
	return false
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// BenchmarkTwoTeamBurst reports search's fire lateness (p50, p99, the
// most) and when pay's twelve runs were done, with and without search's
// guarantee, for pay's runs of 1.8 CPU (search's 0.15 fits beside one),
// of 0.95 CPU (two fill the cluster) and of 1.9 CPU (search's fire fits
// beside none): docs/benchmarks.md.
func BenchmarkTwoTeamBurst(b *testing.B) {
	for _, payCPU := range []float64{1.8, 0.95, 1.9} {
		for _, g := range []bool{false, true} {
			b.Run(fmt.Sprintf("pay=%.2gcpu/guarantee=%v", payCPU, g), func(b *testing.B) {
				var late []time.Duration
				var done time.Duration
				var runs int
				for b.Loop() {
					late, done, runs = twoTeamBurst(payCPU, g)
				}
				b.ReportMetric(quantile(late, 0.5).Seconds(), "search-p50-s")
				b.ReportMetric(quantile(late, 0.99).Seconds(), "search-p99-s")
				b.ReportMetric(float64(len(late)), "fires-served")
				b.ReportMetric(done.Seconds(), "pay-done-s") // 0: not within 150 s
				b.ReportMetric(float64(runs), "pay-runs")
			})
		}
	}
}
