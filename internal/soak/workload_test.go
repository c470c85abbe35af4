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

// A deregister answered 503 took its job out of the checks
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

// A change of unknown outcome (a deregister whose first
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

// A job registered at 15:31:59.998 (its commit), answered
// at 15:32:00.010, it fired its instant of 15:32:00 as it should; the
// window began at the answer, so the run of that instant served none of
// the job's fires (unexplained-run). The registration's window opens at
// its sending.
func TestSetupOpensEachJobAtItsRegistrationsSending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w := &Workload{APIs: []string{srv.URL}, Jobs: 3, Seed: 1, Log: slog.New(slog.DiscardHandler)}
	if err := w.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, s := range w.specs {
		if len(s.Windows) != 1 || s.Windows[0].Opening.IsZero() || s.Windows[0].Opening.After(s.Windows[0].From) {
			t.Errorf("%s: windows %+v, want one opening at the registration's sending, before its answer", name, s.Windows)
		}
	}
}

// A fire whose instant falls between its job's registration's sending and
// answer ran: an edge fire, not an unexplained run.
func TestCheckFireBetweenARegistrationsSendingAndAnswer(t *testing.T) {
	runs := []runSpec{{task: "a0", job: "j", queued: 2.012, start: 2.05, nominal: 2}}
	for _, f := range []float64{4, 6, 8} {
		runs = append(runs, runSpec{task: "a" + string(rune('0'+int(f))), job: "j", queued: f, start: f + 0.01, nominal: f})
	}
	j := every2("j", false)
	j.Windows[0].From, j.Windows[0].Opening = at(2.0104), at(1.9)
	if rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{j}}); len(rep.Anomalies) != 0 {
		t.Errorf("opened at the sending: %v", rep.Anomalies)
	}
}
