package promtext

import (
	"math"
	"testing"
)

// A labelled histogram's series is read by its labels; the unlabelled
// form still reads a plain histogram.
func TestHistogramWithLabels(t *testing.T) {
	m := Parse([]byte(`# TYPE elasticjob_launch_stage_seconds histogram
elasticjob_launch_stage_seconds_bucket{stage="fork",le="0.001"} 1
elasticjob_launch_stage_seconds_bucket{stage="fork",le="0.002"} 3
elasticjob_launch_stage_seconds_bucket{stage="fork",le="+Inf"} 4
elasticjob_launch_stage_seconds_sum{stage="fork"} 0.009
elasticjob_launch_stage_seconds_count{stage="fork"} 4
elasticjob_launch_stage_seconds_bucket{stage="seen",le="0.001"} 9
elasticjob_launch_stage_seconds_bucket{stage="seen",le="0.002"} 9
elasticjob_launch_stage_seconds_bucket{stage="seen",le="+Inf"} 9
elasticjob_launch_stage_seconds_count{stage="seen"} 9
plain_bucket{le="1"} 2
plain_bucket{le="+Inf"} 2
plain_count 2
`))
	h := m.Histogram("elasticjob_launch_stage_seconds", `stage="fork"`)
	if h.Count != 4 || h.Sum != 0.009 || len(h.Le) != 3 || h.Cum[1] != 3 {
		t.Fatalf("fork histogram %+v", h)
	}
	if p50, upper := h.Quantile(.5); p50 != 0.0015 || upper != 0.002 {
		t.Errorf("fork p50 = %v (bucket ≤ %v), want 0.0015 in ≤ 0.002", p50, upper)
	}
	if p := m.Histogram("plain"); p.Count != 2 || len(p.Le) != 2 {
		t.Errorf("plain histogram %+v", p)
	}
}

// Percentile is nearest-rank; Max and Percentile of nothing are NaN.
func TestPercentileAndMax(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if p := Percentile(xs, .5); p != 3 {
		t.Errorf("p50 = %v, want 3", p)
	}
	if p := Percentile(xs, 1); p != 5 {
		t.Errorf("p100 = %v, want 5", p)
	}
	if m := Max(xs); m != 5 {
		t.Errorf("max = %v, want 5", m)
	}
	if !math.IsNaN(Max(nil)) || !math.IsNaN(Percentile(nil, .5)) {
		t.Errorf("empty: max %v, p50 %v, want NaN", Max(nil), Percentile(nil, .5))
	}
}
