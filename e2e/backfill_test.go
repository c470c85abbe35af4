//go:build e2e

package e2e

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

type backfillState struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Progress struct {
		Done, Running, Remaining, Failed, Skipped, Total int
	} `json:"progress"`
}

// A backfill of the last full hour of a `0 */10 * * * ?` job runs it six
// times on the embedded engine, each process handed its instant in
// ELASTICJOB_SCHEDULED_TIME (and the sharding context's scheduledTime);
// the same range again runs nothing.
func TestBackfillHandsEachRunItsInstant(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out := outDir(t)
	j := recorderJob("hourly_report", "rec", out, 1)
	j.Cron = "0 */10 * * * ?"
	j.Props = map[string]string{"script.command.line": "bin/scheduled.sh"}
	s.registerJob(j)

	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-time.Hour)
	req := map[string]any{"jobName": "hourly_report", "from": from, "to": to, "concurrency": 2}
	var b backfillState
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/job/backfills", req), &b); err != nil {
		t.Fatal(err)
	}
	if b.Progress.Total != 6 {
		t.Fatalf("backfill %+v, want 6 instants", b)
	}
	eventually(t, waitLong, func() bool {
		s.getJSON("/api/job/backfills/"+b.ID, &b)
		return b.State == "DONE"
	}, "backfill %s done", b.ID)
	if b.Progress.Done != 6 || b.Progress.Failed != 0 || b.Progress.Remaining != 0 {
		t.Fatalf("progress %+v", b.Progress)
	}
	var want []string
	for i := range 6 {
		want = append(want, from.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339))
	}
	if got := backfilled(t, out); !slices.Equal(got, want) {
		t.Fatalf("the runs saw %v, want %v", got, want)
	}
	ctxs, err := os.ReadFile(filepath.Join(out, "0.ctx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(ctxs), `"scheduledTime":"`+w+`"`) {
			t.Errorf("no sharding context with scheduledTime %s:\n%s", w, ctxs)
		}
	}

	var again backfillState
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/job/backfills", req), &again); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool {
		s.getJSON("/api/job/backfills/"+again.ID, &again)
		return again.State == "DONE"
	}, "second backfill %s done", again.ID)
	if again.Progress.Skipped != 6 || len(backfilled(t, out)) != 6 {
		t.Fatalf("the same range again: %+v, runs %v", again.Progress, backfilled(t, out))
	}
}

// backfilled reads the instants the runs were handed (live fires, handed
// none, left out).
func backfilled(t *testing.T, out string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "scheduled"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	return got
}
