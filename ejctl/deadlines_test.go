package ejctl

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// ejctl deadlines lists the missed deadlines the API gives, a job's on ask.
func TestDeadlinesCommand(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/job/deadlines" {
			http.NotFound(w, r)
			return
		}
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"kind":"start","namespace":"default","jobName":"report","since":"2026-11-25T00:00:00Z","due":"2026-11-25T00:01:00Z","message":"job report has not started"},` +
			`{"kind":"run","namespace":"default","jobName":"","workflow":"nightly","runId":"r1","since":"2026-11-25T00:00:00Z","due":"2026-11-25T01:00:00Z","message":"still running"}]`))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	out, errs, code := runWith(t, env, "deadlines", "--job", "report")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	has(t, "deadlines", out, "JOB", "KIND", "DUE", "report", "start", "job report has not started", "workflow nightly run r1")
	if query != "jobName=report" {
		t.Errorf("query %q", query)
	}
}
