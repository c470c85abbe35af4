//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cronInstants are the instants of a workflow's cron runs, oldest first,
// as its runs' ids name them.
func (s *scheduler) cronInstants(wf string) []time.Time {
	s.t.Helper()
	var page struct {
		Rows []struct {
			RunID  string `json:"runId"`
			Source string `json:"source"`
		} `json:"rows"`
	}
	s.getJSON("/api/workflow/"+wf+"/runs?per_page=1000", &page)
	var out []time.Time
	for _, r := range page.Rows {
		if r.Source != "CRON" {
			continue
		}
		at, err := time.Parse("20060102T150405.000Z", strings.TrimSuffix(r.RunID, "-cron"))
		if err != nil {
			s.t.Fatalf("cron run id %q: %v", r.RunID, err)
		}
		out = append(out, at)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// A workflow's cron fires from the leader's one timetable, beside the
// jobs': every second, through a kill -9 and a restart on the same data
// directory, each instant makes exactly one run. The instants no leader
// fired while the scheduler was down are made by the next one
// (misfire=true: each), and none is made twice (a run's id is its
// instant's).
func TestWorkflowCronFiresEachInstantOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, schedOpts{dataDir: dataDir})
	s1.must(http.MethodPost, "/api/app", appConfig{AppName: "wfapp", BootstrapScript: "none", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true})
	s1.must(http.MethodPost, "/api/job/register", wfJob("tick", 0.1, "0", 0))
	out := outDir(t)
	s1.must(http.MethodPost, "/api/workflow", map[string]any{"name": "every-second", "cron": "* * * * * ?", "misfire": true,
		"maxConcurrentRuns": 100, "parameter": out, "nodes": []map[string]any{{"id": "tick", "job": "tick"}}})
	eventually(t, waitLong, func() bool { return len(s1.cronInstants("every-second")) >= 3 }, "three cron runs (runs: %v)",
		late(func() any { return s1.cronInstants("every-second") }))
	s1.kill9()
	killed := time.Now()

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	eventually(t, waitLong, func() bool {
		ins := s2.cronInstants("every-second")
		return len(ins) > 0 && ins[len(ins)-1].After(killed.Add(3*time.Second))
	}, "cron runs past the restart (runs: %v)", late(func() any { return s2.cronInstants("every-second") }))
	ins := s2.cronInstants("every-second")
	for i := 1; i < len(ins); i++ {
		if d := ins[i].Sub(ins[i-1]); d != time.Second {
			t.Errorf("runs of %s and %s: %v apart, want every second once (all: %v)", ins[i-1].Format(time.TimeOnly), ins[i].Format(time.TimeOnly), d, fmtInstants(ins))
		}
	}
	t.Logf("%d cron runs, one per second from %s to %s, across a kill -9 at %s", len(ins), ins[0].Format(time.TimeOnly),
		ins[len(ins)-1].Format(time.TimeOnly), killed.UTC().Format(time.TimeOnly))
}

func fmtInstants(ins []time.Time) string {
	s := make([]string, len(ins))
	for i, at := range ins {
		s[i] = at.Format(time.TimeOnly)
	}
	return fmt.Sprint(s)
}
