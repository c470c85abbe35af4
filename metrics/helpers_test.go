package metrics

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// family returns the gathered metric family name (nil when absent).
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// series finds the series of a family whose labels are exactly labels
// ("k=v,k=v"; "" for none).
func series(t *testing.T, m *Metrics, name, labels string) *dto.Metric {
	t.Helper()
	f := family(t, m, name)
	if f == nil {
		return nil
	}
	for _, s := range f.GetMetric() {
		var ls []string
		for _, l := range s.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(ls, ",") == labels {
			return s
		}
	}
	return nil
}

// stage returns a stage's observation count and sum in milliseconds.
func stage(t *testing.T, m *Metrics, name string) (uint64, float64) {
	t.Helper()
	s := series(t, m, "elasticjob_launch_stage_seconds", "stage="+name)
	if s == nil {
		t.Fatalf("no series for stage %s", name)
	}
	h := s.GetHistogram()
	return h.GetSampleCount(), math.Round(h.GetSampleSum()*1e6) / 1e3
}

// wantStages asserts every stage's count and sum (ms) as "count/sum".
func wantStages(t *testing.T, m *Metrics, want map[string]string) {
	t.Helper()
	for _, st := range Stages {
		n, sum := stage(t, m, st)
		got := fmt.Sprintf("%d/%g", n, sum)
		w, ok := want[st]
		if !ok {
			w = "0/0"
		}
		if got != w {
			t.Errorf("stage %s: count/sum(ms) = %s, want %s", st, got, w)
		}
	}
}

func gauge(t *testing.T, m *Metrics, name, labels string) (float64, bool) {
	t.Helper()
	s := series(t, m, name, labels)
	if s == nil {
		return 0, false
	}
	return s.GetGauge().GetValue(), true
}
