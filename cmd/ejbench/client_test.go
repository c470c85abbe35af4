package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A labelled histogram's series is read by its labels; the unlabelled
// form still reads a plain histogram.
func TestHistogramWithLabels(t *testing.T) {
	m := parseMetrics([]byte(`# TYPE elasticjob_launch_stage_seconds histogram
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
	h := m.histogram("elasticjob_launch_stage_seconds", `stage="fork"`)
	if h.count != 4 || h.sum != 0.009 || len(h.le) != 3 || h.cum[1] != 3 {
		t.Fatalf("fork histogram %+v", h)
	}
	if p50, upper := h.quantile(.5); p50 != 0.0015 || upper != 0.002 {
		t.Errorf("fork p50 = %v (bucket ≤ %v), want 0.0015 in ≤ 0.002", p50, upper)
	}
	if p := m.histogram("plain"); p.count != 2 || len(p.le) != 2 {
		t.Errorf("plain histogram %+v", p)
	}
}

// scrapeAt's reading time brackets the moment the handler read its values:
// the request was sent before it and the headers came after it.
func TestScrapeAtBracketsTheRead(t *testing.T) {
	var mu sync.Mutex
	var readAt time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		readAt = time.Now()
		mu.Unlock()
		_, _ = w.Write([]byte("elasticjob_tasks_launched_total 42\n"))
	}))
	defer srv.Close()
	c := newClient(srv.URL, 1)
	for i := range 3 {
		m, at, half, err := c.scrapeAt()
		if err != nil {
			t.Fatal(err)
		}
		if m.sum("elasticjob_tasks_launched_total") != 42 {
			t.Fatalf("reading %d: %v", i, m)
		}
		mu.Lock()
		r := readAt
		mu.Unlock()
		if r.Before(at.Add(-half)) || r.After(at.Add(half)) {
			t.Fatalf("reading %d at %s ±%s; the handler read at %s, outside", i, at.Format(time.RFC3339Nano), half, r.Format(time.RFC3339Nano))
		}
	}
}
