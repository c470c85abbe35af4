package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

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
	c := NewClient(srv.URL, 1)
	for i := range 3 {
		m, at, half, err := c.ScrapeAt()
		if err != nil {
			t.Fatal(err)
		}
		if m.Sum("elasticjob_tasks_launched_total") != 42 {
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

// A registration answered 503 is sent again after the answer's
// Retry-After (200 ms at least) and counted; other refusals are counted
// by status with their first answer.
func TestRegisterJobsRetries503AndCountsRefusals(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		n := seen[string(b)]
		mu.Unlock()
		switch {
		case string(b) == "a" && n == 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"message":"no scheduler is the leader at the moment"}`))
		case string(b) == "b":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"message":"Job 'b' already existed."}`))
		}
	}))
	defer srv.Close()
	res := RegisterJobs(context.Background(), NewClient(srv.URL, 2), 2, 1, func(i int) string { return []string{"a", "b"}[i] })
	if res.OK != 1 || res.Errors != 1 || res.Retried != 1 || seen["a"] != 2 {
		t.Errorf("ok %d, errors %d, retried %d, a sent %d times: want 1, 1, 1, 2", res.OK, res.Errors, res.Retried, seen["a"])
	}
	if res.Answers[503] != 1 || res.Answers[409] != 1 || !strings.Contains(res.Refusals(), "no scheduler is the leader") ||
		!strings.Contains(res.Refusals(), "already existed") {
		t.Errorf("refusals %v: %s", res.Answers, res.Refusals())
	}
}
