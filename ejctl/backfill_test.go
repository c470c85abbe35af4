package ejctl

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const backfillJSON = `{"id":"bf-1","jobName":"report","from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z","concurrency":2,` +
	`"state":"%s","inFlight":[],"failedInstants":["2026-11-01T03:10:00Z"],"progress":{"done":3,"running":1,"remaining":140,"failed":1,"skipped":0,"total":144}}`

// ejctl backfill start|ls|get|pause|resume|cancel speak /api/job/backfills.
func TestBackfillCommands(t *testing.T) {
	var calls []string
	var started map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		state := "RUNNING"
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/job/backfills":
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &started)
			w.WriteHeader(http.StatusCreated)
		case r.URL.Path == "/api/job/backfills":
			_, _ = w.Write([]byte("[" + strings.Replace(backfillJSON, "%s", state, 1) + "]"))
			return
		case strings.HasSuffix(r.URL.Path, "/pause"):
			state = "PAUSED"
		case strings.HasSuffix(r.URL.Path, "/cancel"):
			state = "CANCELLED"
		}
		_, _ = w.Write([]byte(strings.Replace(backfillJSON, "%s", state, 1)))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	out, errs, code := runWith(t, env, "backfill", "start", "report", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-02T00:00:00Z", "--concurrency", "2")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errs)
	}
	has(t, "start", out, "backfill bf-1 of job report started", "REMAINING", "140", "144")
	if started["jobName"] != "report" || started["from"] != "2026-11-01T00:00:00Z" || started["concurrency"] != float64(2) {
		t.Fatalf("request %v", started)
	}
	out, _, _ = runWith(t, env, "backfill", "ls", "--job", "report")
	has(t, "ls", out, "bf-1", "RUNNING")
	out, _, _ = runWith(t, env, "backfill", "get", "bf-1")
	has(t, "get", out, "failed instants (1):", "2026-11-01T03:10:00Z", "ejctl backfill rerun bf-1")
	calls = calls[:len(calls)-1]
	out, _, _ = runWith(t, env, "backfill", "pause", "bf-1")
	has(t, "pause", out, "paused", "PAUSED")
	out, _, _ = runWith(t, env, "backfill", "cancel", "bf-1")
	has(t, "cancel", out, "cancelled", "CANCELLED")
	if _, errs, code := runWith(t, env, "backfill", "start", "report", "--from", "yesterday", "--to", "2026-11-02T00:00:00Z"); code == 0 || !strings.Contains(errs, "--from") {
		t.Fatalf("bad --from: exit %d %s", code, errs)
	}
	want := []string{"POST /api/job/backfills?", "GET /api/job/backfills?jobName=report", "POST /api/job/backfills/bf-1/pause?", "POST /api/job/backfills/bf-1/cancel?"}
	for i, w := range want {
		if i >= len(calls) || !strings.HasPrefix(calls[i], w) {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	}
}

// ejctl backfill start --workflow NAME sends workflowName; ls --workflow
// filters by it; a workflow's backfill is shown as one.
func TestWorkflowBackfillCommands(t *testing.T) {
	var calls []string
	var started map[string]any
	const wfJSON = `{"id":"bf-2","workflowName":"nightly","from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z","concurrency":1,` +
		`"state":"RUNNING","inFlight":[],"progress":{"done":0,"running":1,"remaining":23,"failed":0,"skipped":0,"total":24}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &started)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(wfJSON))
			return
		}
		_, _ = w.Write([]byte("[" + wfJSON + "]"))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	out, errs, code := runWith(t, env, "backfill", "start", "--workflow", "nightly", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-02T00:00:00Z")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errs)
	}
	has(t, "start", out, "backfill bf-2 of workflow nightly started", "workflow:nightly", "24")
	if started["workflowName"] != "nightly" || started["jobName"] != nil {
		t.Fatalf("request %v", started)
	}
	out, _, _ = runWith(t, env, "backfill", "ls", "--workflow", "nightly")
	has(t, "ls", out, "bf-2", "workflow:nightly")
	if len(calls) != 2 || calls[1] != "GET /api/job/backfills?workflowName=nightly" {
		t.Fatalf("calls %v", calls)
	}
}

// ejctl backfill rerun ID starts a backfill of the same job, range and
// concurrency, confirming its count: the API re-runs the instants that
// failed and skips those that succeeded.
func TestBackfillRerun(t *testing.T) {
	var started map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &started)
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write([]byte(strings.Replace(backfillJSON, "%s", "DONE", 1)))
	}))
	defer srv.Close()
	out, errs, code := runWith(t, map[string]string{"EJCTL_ADDR": srv.URL}, "backfill", "rerun", "bf-1")
	if code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, errs)
	}
	has(t, "rerun", out, "re-running the failed instants of bf-1")
	if started["jobName"] != "report" || started["from"] != "2026-11-01T00:00:00Z" || started["to"] != "2026-11-02T00:00:00Z" ||
		started["concurrency"] != float64(2) || started["maxRuns"] != float64(144) {
		t.Fatalf("request %v", started)
	}
}
