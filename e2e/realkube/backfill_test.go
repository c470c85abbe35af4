//go:build e2e

package realkube

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBackfillAndDeadlinesOnKubernetes: a backfill of the last full hour of a
// `0 */10 * * * ?` job runs it six times as pods, each handed its nominal
// instant (ELASTICJOB_SCHEDULED_TIME); a pod running past its job's
// runDeadlineSeconds is alerted once (GET /api/job/deadlines, a
// DEADLINE_MISSED status trace) and not killed.
func TestBackfillAndDeadlinesOnKubernetes(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", true)
	j := transient("hourly", "rec", 1, "")
	j["cron"] = "0 */10 * * * ?"
	s.register(j)
	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-time.Hour)
	var b struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Progress struct{ Done, Failed, Total int }
	}
	decode(t, s.must(http.MethodPost, "/api/job/backfills", map[string]any{"jobName": "hourly", "from": from, "to": to, "concurrency": 2}), &b)
	if b.Progress.Total != 6 {
		t.Fatalf("backfill %+v, want 6 instants", b)
	}
	eventually(t, waitLong, func() bool {
		decode(t, s.must(http.MethodGet, "/api/job/backfills/"+b.ID, nil), &b)
		return b.State == "DONE"
	}, "backfill %s to be done", b.ID)
	if b.Progress.Done != 6 || b.Progress.Failed != 0 {
		t.Fatalf("backfill progress %+v", b.Progress)
	}
	var got []string
	for _, evs := range rec.events("hourly") {
		for _, e := range evs {
			if at, ok := strings.CutPrefix(e, "at="); ok {
				got = append(got, at)
			}
		}
	}
	slices.Sort(got)
	var want []string
	for i := range 6 {
		want = append(want, from.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the pods saw %v, want %v", got, want)
	}

	slow := transient("slow", "rec", 1, "sleep 12")
	slow["runDeadlineSeconds"] = 1
	s.register(slow)
	s.trigger("slow")
	var rows []struct {
		Kind   string `json:"kind"`
		TaskID string `json:"taskId"`
	}
	eventually(t, waitLong, func() bool {
		decode(t, s.must(http.MethodGet, "/api/job/deadlines?jobName=slow", nil), &rows)
		return len(rows) == 1
	}, "the run deadline alert in GET /api/job/deadlines")
	if rows[0].Kind != "run" || rows[0].TaskID == "" {
		t.Fatalf("alert %+v, want kind run for the pod's task", rows[0])
	}
	eventually(t, waitLong, func() bool { return rec.count("slow", "end") == 1 }, "the slow pod to end on its own (not killed)")
	n := 0
	for _, tr := range s.traces("slow") {
		if tr.State == "DEADLINE_MISSED" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d DEADLINE_MISSED status traces, want 1", n)
	}
}
