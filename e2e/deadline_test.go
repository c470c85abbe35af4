//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run going longer than its job's runDeadlineSeconds raises one alert,
// seen by the job's webhook, GET /api/job/deadlines and the history (a
// status trace DEADLINE_MISSED); nothing is killed: the run, released, ends
// on its own and succeeds.
func TestDeadlineAlertReachesWebhookListAndHistory(t *testing.T) {
	t.Parallel()
	hooks := make(chan map[string]any, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) == nil {
			hooks <- m
		}
	}))
	defer srv.Close()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out := outDir(t)
	s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "long_report", "appName": "rec",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "jobParameter": out, "cpuCount": 0.1, "memoryMB": 32,
		"runDeadlineSeconds": 1, "props": map[string]string{"script.command.line": "bin/gate.sh", "webhook.url": srv.URL}})
	s.trigger("long_report")

	var alert map[string]any
	select {
	case alert = <-hooks:
	case <-time.After(waitLong): // failure bound only
		t.Fatal("no webhook call for the missed run deadline")
	}
	if alert["event"] != "DEADLINE_MISSED" || alert["kind"] != "run" || alert["jobName"] != "long_report" || alert["namespace"] != "default" {
		t.Fatalf("webhook body %v", alert)
	}
	var rows []struct {
		Kind    string `json:"kind"`
		JobName string `json:"jobName"`
		TaskID  string `json:"taskId"`
	}
	s.getJSON("/api/job/deadlines?jobName=long_report", &rows)
	if len(rows) != 1 || rows[0].Kind != "run" || rows[0].TaskID == "" {
		t.Fatalf("GET /api/job/deadlines: %+v, want the run alert", rows)
	}
	eventually(t, waitLong, func() bool {
		return slices.ContainsFunc(s.statusMessages("long_report"), func(m string) bool { return strings.HasPrefix(m, "[run] ") })
	}, "a DEADLINE_MISSED status trace for long_report")

	// Nothing was killed: the run, released, ends on its own.
	if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool {
		b, _ := os.ReadFile(filepath.Join(out, "events"))
		return strings.Contains(string(b), "end ")
	}, "the gated run to end on its own")
	select {
	case extra := <-hooks:
		t.Fatalf("a second webhook call: %v", extra)
	default:
	}
}
