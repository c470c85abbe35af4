//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNamespaceCapacityBindsThroughTheAPI: a limit set with
// PUT /api/namespaces binds the real scheduler's launch round: of pay's
// two 0.6-CPU runs under a 1-CPU limit one runs and the other waits,
// saying the namespace's limit holds it; raising the limit (the leader
// reads it again within 5 s) lets it run.
func TestNamespaceCapacityBindsThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{extra: []string{"--auth-username", "admin", "--auth-password", "s3cret"}})
	s.auth = func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }
	s.must(http.MethodPut, "/api/namespaces/pay", map[string]any{"limit": map[string]any{"cpuCount": 1, "memoryMB": 2048}})
	s.must(http.MethodPost, "/api/app?namespace=pay", map[string]any{"appName": "rec", "appURL": fileURL(recorderTGZ),
		"bootstrapScript": "bin/record.sh", "cpuCount": 0.1, "memoryMB": 32})
	for _, job := range []string{"first", "second"} {
		s.must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any{"jobName": job, "appName": "rec", "shardingTotalCount": 1,
			"cpuCount": 0.6, "memoryMB": 16, "jobType": "SCRIPT", "props": map[string]string{"script.command.line": "sleep 600; true"}})
		s.must(http.MethodPost, "/api/job/trigger?namespace=pay", job)
	}
	running := func() int {
		var rows []map[string]any
		_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/running?namespace=pay", nil), &rows)
		return len(rows)
	}
	var ready string
	eventually(t, waitLong, func() bool {
		ready = string(s.must(http.MethodGet, "/api/job/tasks/ready?namespace=pay", nil))
		return running() == 1 && strings.Contains(ready, `"reason":"namespace_limit"`)
	}, "one of pay's runs running and the other held by pay's limit (ready: %s)", ready)
	for _, want := range []string{`"namespace":"pay"`, `"rule":"limit"`, `namespace pay is at its limit`} {
		if !strings.Contains(ready, want) {
			t.Errorf("the waiting run's reason lacks %s: %s", want, ready)
		}
	}
	var ns struct {
		Limit struct {
			CPUCount float64 `json:"cpuCount"`
		} `json:"limit"`
		Usage struct {
			RunningTasks int `json:"runningTasks"`
			Queued       int `json:"queued"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/namespaces/pay", nil), &ns)
	if ns.Limit.CPUCount != 1 || ns.Usage.RunningTasks != 1 || ns.Usage.Queued != 1 {
		t.Errorf("GET /api/namespaces/pay: %+v", ns)
	}
	s.must(http.MethodPut, "/api/namespaces/pay", map[string]any{"limit": map[string]any{"cpuCount": 2, "memoryMB": 2048}})
	eventually(t, waitLong, func() bool { return running() == 2 }, "pay's second run to start once its limit was raised")
}
