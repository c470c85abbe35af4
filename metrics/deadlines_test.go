package metrics

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/observe"
)

func TestDeadlineMetrics(t *testing.T) {
	m := New()
	d := m.Deadlines()
	d.DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "team-a", Job: "etl"}, observe.Hook{})
	d.DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "team-a", Job: "etl"}, observe.Hook{})
	s := series(t, m, "elasticjob_deadline_missed_total", "job=etl,kind=start,namespace=team-a")
	if s == nil || s.GetCounter().GetValue() != 2 {
		t.Fatalf("missed: %v", s)
	}
	d.StartEstimateError("team-a", 30*time.Second, 0.1)
	h := series(t, m, "elasticjob_start_estimate_error_ratio", "namespace=team-a")
	if h == nil || h.GetHistogram().GetSampleCount() != 1 || h.GetHistogram().GetSampleSum() != 0.1 {
		t.Fatalf("ratio: %v", h)
	}
	if a := series(t, m, "elasticjob_start_estimate_error_seconds", "namespace=team-a"); a == nil || a.GetHistogram().GetSampleSum() != 30 {
		t.Fatalf("abs: %v", a)
	}
}
