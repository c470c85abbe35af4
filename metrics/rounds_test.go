package metrics

import (
	"testing"

	"github.com/ejcloud/elasticjob/observe"
)

// TestRoundsByClustersAndPhase: each round counts once under the clusters it could place
// on, its tasks summed, each phase observed, and the running view's size kept.
func TestRoundsByClustersAndPhase(t *testing.T) {
	m := New()
	m.Round(observe.Round{Clusters: 2, Tasks: 300, Running: 900, View: ms(2), Decide: ms(3), Commit: ms(5), Other: ms(1)})
	m.Round(observe.Round{Clusters: 2, Tasks: 100, Running: 1000, View: ms(2), Decide: ms(1), Commit: ms(3)})
	m.Round(observe.Round{Clusters: 1, Tasks: 50, Running: 700, Accept: ms(4)})
	for _, tc := range []struct {
		clusters string
		rounds   uint64
		tasks    float64
	}{{"2", 2, 400}, {"1", 1, 50}} {
		s := series(t, m, "elasticjob_launch_round_tasks", "clusters="+tc.clusters)
		if s == nil {
			t.Fatalf("no rounds with clusters=%s", tc.clusters)
		}
		if h := s.GetHistogram(); h.GetSampleCount() != tc.rounds || h.GetSampleSum() != tc.tasks {
			t.Errorf("clusters=%s: %d rounds of %g tasks, want %d of %g", tc.clusters, h.GetSampleCount(), h.GetSampleSum(), tc.rounds, tc.tasks)
		}
	}
	for phase, want := range map[string]float64{"view": 4, "decide": 4, "commit": 8, "accept": 4, "other": 1} {
		s := series(t, m, "elasticjob_launch_round_seconds", "phase="+phase)
		if s == nil {
			t.Fatalf("no phase %s", phase)
		}
		if h := s.GetHistogram(); h.GetSampleCount() != 3 || int(h.GetSampleSum()*1e6+0.5) != int(want*1e3) {
			t.Errorf("phase %s: %d rounds, %g s; want 3, %g ms", phase, h.GetSampleCount(), h.GetSampleSum(), want)
		}
	}
	if g := series(t, m, "elasticjob_launch_round_running_tasks", ""); g.GetGauge().GetValue() != 700 {
		t.Errorf("running in the last round's view: %g, want 700", g.GetGauge().GetValue())
	}
}

// TestStatusBatches: each batch counts once, its updates summed and its time observed.
func TestStatusBatches(t *testing.T) {
	m := New()
	m.StatusBatch(184, ms(68))
	m.StatusBatch(16, ms(20))
	u := series(t, m, "elasticjob_status_batch_updates", "").GetHistogram()
	s := series(t, m, "elasticjob_status_batch_seconds", "").GetHistogram()
	if u.GetSampleCount() != 2 || u.GetSampleSum() != 200 || s.GetSampleCount() != 2 || int(s.GetSampleSum()*1000+0.5) != 88 {
		t.Fatalf("batches %d of %g updates, %g s; want 2 of 200, 0.088 s", u.GetSampleCount(), u.GetSampleSum(), s.GetSampleSum())
	}
}
