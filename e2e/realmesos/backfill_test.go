//go:build e2e

package realmesos

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBackfillAndDeadlinesOnRealMesos: a backfill of the last full hour of a
// `0 */10 * * * ?` job runs it six times on the real agent, each task handed
// its nominal instant (ELASTICJOB_SCHEDULED_TIME); a run going past its
// runDeadlineSeconds on the real agent is alerted once (GET
// /api/job/deadlines, a DEADLINE_MISSED status trace) and not killed.
func TestBackfillAndDeadlinesOnRealMesos(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	s := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-backfill"})[0]
	eventually(t, waitLong, s.subscribed, "the scheduler to subscribe")
	s.publishApp("recorder", recorderURL(), "bin/record.sh")

	out := outDir(t)
	s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "hourly", "appName": "recorder",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "jobParameter": out, "cpuCount": 0.1, "memoryMB": 32,
		"cron": "0 */10 * * * ?", "props": map[string]string{"script.command.line": "bin/scheduled.sh"}})
	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-time.Hour)
	var b struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Progress struct{ Done, Failed, Total int }
	}
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/job/backfills", map[string]any{"jobName": "hourly", "from": from, "to": to, "concurrency": 2}), &b); err != nil {
		t.Fatal(err)
	}
	if b.Progress.Total != 6 {
		t.Fatalf("backfill %+v, want 6 instants", b)
	}
	eventually(t, waitLong, func() bool {
		_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/backfills/"+b.ID, nil), &b)
		return b.State == "DONE"
	}, "backfill %s to be done", b.ID)
	if b.Progress.Done != 6 || b.Progress.Failed != 0 {
		t.Fatalf("backfill progress %+v", b.Progress)
	}
	raw, err := os.ReadFile(filepath.Join(out, "scheduled"))
	if err != nil {
		t.Fatal(err)
	}
	agentID := agentOf(t, m)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		at, task, _ := strings.Cut(l, " ")
		if at == "" {
			// The job's own cron fire (no nominal instant): the test runs at any
			// time of the hour, so a :x0 instant can fall inside it.
			continue
		}
		if a := s.taskAgent(task); a != agentID {
			t.Fatalf("task %s ran on %q, not on the real agent %s", task, a, agentID)
		}
		got = append(got, at)
	}
	slices.Sort(got)
	var want []string
	for i := range 6 {
		want = append(want, from.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the real agent's runs saw %v, want %v", got, want)
	}

	slow := outDir(t)
	s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "slow", "appName": "recorder",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "shardingItemParameters": "0=12", "jobParameter": slow,
		"cpuCount": 0.1, "memoryMB": 32, "runDeadlineSeconds": 1, "props": map[string]string{"script.command.line": "bin/slow.sh"}})
	s.trigger("slow")
	var rows []struct {
		Kind   string `json:"kind"`
		TaskID string `json:"taskId"`
	}
	eventually(t, waitLong, func() bool {
		_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/deadlines?jobName=slow", nil), &rows)
		return len(rows) == 1
	}, "the run deadline alert in GET /api/job/deadlines")
	if rows[0].Kind != "run" || s.taskAgent(rows[0].TaskID) != agentID {
		t.Fatalf("alert %+v, want kind run for the task on the real agent", rows[0])
	}
	eventually(t, waitLong, func() bool {
		b, _ := os.ReadFile(filepath.Join(slow, "slow.txt"))
		return strings.Contains(string(b), "end 0 ")
	}, "the slow run to end on its own (not killed)")
	var traces struct {
		Rows []struct {
			State   string `json:"state"`
			Message string `json:"message"`
		} `json:"rows"`
	}
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/events/statusTraces?per_page=100&jobName=slow", nil), &traces)
	n := 0
	for _, r := range traces.Rows {
		if r.State == "DEADLINE_MISSED" && strings.HasPrefix(r.Message, "[run] ") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d DEADLINE_MISSED status traces, want 1: %+v", n, traces.Rows)
	}
}
