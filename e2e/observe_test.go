//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape reads /metrics into series → value.
func (s *scheduler) scrape() map[string]float64 {
	s.t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(s.must(http.MethodGet, "/metrics", nil)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.LastIndexByte(line, ' '); i > 0 && line[0] != '#' {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				out[line[:i]] = v
			}
		}
	}
	return out
}

// TestOperatorsView: a real launch fills every launch-path stage (the
// executor's LAUNCH, fork and start times travel in its TASK_RUNNING),
// failed runs in a row and the registry's state are exported by the
// leader, and the profiles are served to admins only when enabled.
func TestOperatorsView(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{extra: []string{"--debug-pprof", "true", "--auth-username", "admin", "--auth-password", "s3cret",
		"--auth-guest-username", "guest", "--auth-guest-password", "g-pass"}})
	admin := func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }
	s.auth = admin
	out := outDir(t)
	s.publishApp("obs_app", fileURL(recorderTGZ), "bin/record.sh", true)
	s.registerJob(recorderJob("obs", "obs_app", out, 1))
	s.runAndWait("obs", out, 1)
	s.runAndWait("obs", out, 2) // a warm executor: the same path as the benchmark's
	m := s.scrape()
	for _, st := range []string{"commit", "seen", "accept", "agent", "executor", "fork", "running"} {
		if n := m[`elasticjob_launch_stage_seconds_count{stage="`+st+`"}`]; n < 2 {
			t.Errorf("stage %s observed %v times after two runs, want 2", st, n)
		}
	}
	if m[`elasticjob_leader`] != 1 || m[`elasticjob_queue_oldest_seconds{queue="ready"}`] != 0 {
		t.Errorf("leader %v, oldest ready %v; want 1 and 0", m[`elasticjob_leader`], m[`elasticjob_queue_oldest_seconds{queue="ready"}`])
	}
	if _, ok := m[`elasticjob_last_run_duration_seconds{job="obs",namespace="default"}`]; !ok {
		t.Error("no last run duration for the job that ran")
	}

	s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "fails", "appName": "obs_app",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 32, "jobType": "SCRIPT",
		"props": map[string]string{"script.command.line": "exit 3; true"}})
	for range 2 {
		s.triggerToFail("fails")
		eventually(t, waitLong, func() bool { return s.idle("fails") }, "the failing job to end")
	}
	if n := s.scrape()[`elasticjob_job_failed_runs_in_a_row{job="fails",namespace="default"}`]; n != 2 {
		t.Errorf("failed runs in a row = %v, want 2", n)
	}

	s.auth = nil
	if code, _ := s.do(http.MethodGet, "/debug/pprof/heap?debug=1", nil); code != http.StatusUnauthorized {
		t.Errorf("anonymous profile: %d, want 401", code)
	}
	s.auth = func(r *http.Request) { r.SetBasicAuth("guest", "g-pass") }
	if code, _ := s.do(http.MethodGet, "/debug/pprof/heap?debug=1", nil); code != http.StatusForbidden {
		t.Errorf("guest profile: %d, want 403", code)
	}
	s.auth = admin
	if body := string(s.must(http.MethodGet, "/debug/pprof/mutex?debug=1", nil)); !strings.Contains(body, "--- mutex:") {
		t.Errorf("mutex profile: %.200s", body)
	}
}

// Profiles are off unless enabled (the path is then the console's, as
// any unknown one).
func TestPprofOffByDefault(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	if code, body := s.do(http.MethodGet, "/debug/pprof/heap?debug=1", nil); strings.Contains(string(body), "heap profile") {
		t.Errorf("GET /debug/pprof/heap without debug_pprof served a profile: %d %.100s", code, body)
	}
}
