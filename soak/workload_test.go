package soak

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// zk seed 612: a deregister answered 503 took sk119 out of the checks
// (its body dropped); the next change drawn for it sent a register
// without a body, then an enable whose answer opened a window on the
// dropped body and panicked. A job out of the checks gets no more
// changes.
func TestChangeSkipsAJobOutOfTheChecks(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w := &Workload{APIs: []string{srv.URL}, Log: slog.New(slog.DiscardHandler)}
	w.specs = map[string]*jobSpec{"j": {Job: Job{Name: "j", Windows: []Window{{From: time.Unix(0, 0), To: time.Unix(10, 0), Cron: "*/2 * * * * ?"}}}}}
	w.change(context.Background(), rand.New(rand.NewPCG(1, 2)), "j")
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d requests for a job out of the checks", n)
	}
}

// A change of unknown outcome (embedded seed 812: a deregister whose first
// try landed while the scheduler was paused, retried and answered 404)
// takes the job out of the checks from its sending: Unchecked, its windows
// before it kept.
func TestFailedChangeMarksTheJobUnchecked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	w := &Workload{APIs: []string{srv.URL}, Log: slog.New(slog.DiscardHandler)}
	from := time.Now().Add(-time.Minute)
	w.specs = map[string]*jobSpec{"j": {Job: Job{Name: "j", Windows: []Window{{From: from, Cron: "*/2 * * * * ?"}}},
		body: map[string]any{"cron": "*/2 * * * * ?"}, changer: true, open: true}}
	w.order = []string{"j"}
	before := time.Now()
	w.change(context.Background(), rand.New(rand.NewPCG(1, 2)), "j")
	jobs := w.Close(time.Now())
	if len(jobs) != 1 || len(jobs[0].Windows) != 1 {
		t.Fatalf("the window before the failed change is kept: %+v", jobs)
	}
	j := jobs[0]
	if j.Unchecked.Before(before) || !j.Windows[0].To.Equal(j.Unchecked) {
		t.Errorf("unchecked from the change's sending %v, its window closed then %v", j.Unchecked, j.Windows[0].To)
	}
}
