package ejctl

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tasks ready says why each execution waits (the API's summary of the
// holders), and history says who triggered each run and how long it took
// (issue 42); ejctl names itself to the API (X-EJ-Client: ejctl).
func TestTasksReadyAndHistoryColumns(t *testing.T) {
	var client string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client = r.Header.Get("X-EJ-Client")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/job/tasks/ready":
			_, _ = w.Write([]byte(`[{"jobName":"report","times":1,"since":"2026-11-25T00:00:00Z","waiting":{"reason":"reserved","message":"long words",` +
				`"since":"2026-11-25T00:00:01Z","summary":"waits for 1 CPU and 64 MB; job pay_settle holds 1.9 CPUs and 64 MB until it ends (running 5s of its usual 8s)"},` +
				`"position":1,"estimatedStart":"2026-11-25T00:00:08Z"},` +
				`{"jobName":"fresh","times":1,"since":"2026-11-25T00:00:00Z","position":2},` +
				`{"jobName":"huge","times":1,"since":"2026-11-25T00:00:00Z","position":3,"waiting":{"reason":"never_fits","message":"needs 64 CPUs"}}]`))
		case "/api/job/events/executions":
			if r.URL.Query().Get("triggeredBy") != "cron" {
				t.Errorf("history query %v: want triggeredBy=cron", r.URL.Query())
			}
			_, _ = w.Write([]byte(`{"total":1,"rows":[{"jobName":"report","shardingItem":0,"source":"NORMAL_TRIGGER","triggeredBy":"cron","nominalAt":"2026-11-24T23:59:58Z",` +
				`"startTime":"2026-11-25T00:00:00Z","completeTime":"2026-11-25T00:01:05Z","durationMs":65400,"success":true,"hostname":"h","taskId":"t1"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	out, errs, code := runWith(t, env, "tasks", "ready")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	has(t, "tasks ready", out, "POS", "EST. START", "unknown", "never", fmtTime(time.Date(2026, 11, 25, 0, 0, 8, 0, time.UTC)), "REASON", "WHY", "reserved", "job pay_settle holds 1.9 CPUs and 64 MB until it ends (running 5s of its usual 8s)")
	if !strings.Contains(out, "fresh") || client != "ejctl" {
		t.Errorf("output %q, client header %q", out, client)
	}
	out, errs, code = runWith(t, env, "history", "--triggered-by", "cron")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	has(t, "history", out, "TRIGGERED BY", "FIRE", fmtTime(time.Date(2026, 11, 24, 23, 59, 58, 0, time.UTC)), "DURATION", "cron", "1m5s")
}
