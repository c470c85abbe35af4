package bench

import (
	"net/http"
	"net/http/httptest"
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
