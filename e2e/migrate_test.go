//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies dir src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		if filepath.Base(p) == "README.md" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm()|0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A data directory made by the code before namespaces (testdata/olddata:
// its registry, its history at schema version 5 and a hosted package)
// opens as the default namespace, untouched: the same app and jobs by the
// original's curls, the same history rows with their ids, the package
// still served and run; a new namespace starts empty beside it.
func TestDataDirOfTheCodeBefore(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	copyTree(t, filepath.Join("testdata", "olddata"), data)
	s := startScheduler(t, schedOpts{dataDir: data})

	var a struct{ AppName, AppURL, BootstrapScript string }
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/app/legacy_app", nil), &a)
	if a.BootstrapScript != "bin/start.sh" || !strings.Contains(a.AppURL, "/packages/6621a51b45419896b17f7dbced4a50f0664437eb7b56e321e47b428fa0f0f8f3/") {
		t.Fatalf("legacy_app: %+v", a)
	}
	var j struct {
		JobName, Description   string
		ShardingTotalCount     int
		ShardingItemParameters string
	}
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/jobs/legacy_job", nil), &j)
	if j.Description != "made by the code before namespaces" || j.ShardingTotalCount != 2 || j.ShardingItemParameters != "0=Beijing,1=Shanghai" {
		t.Fatalf("legacy_job: %+v", j)
	}
	if got := strings.TrimSpace(string(s.must(http.MethodGet, "/api/job/legacy_off/disable", nil))); got != "true" {
		t.Errorf("legacy_off's disable flag: %s", got)
	}
	if a, b := s.must(http.MethodGet, "/api/job/jobs", nil), s.must(http.MethodGet, "/api/job/jobs?namespace=default", nil); string(a) != string(b) {
		t.Errorf("the default namespace named and not: %s / %s", a, b)
	}
	// The history rows the code before wrote, with their ids.
	var page struct {
		Total int `json:"total"`
		Rows  []struct {
			ID, TaskID string
			Success    bool
		} `json:"rows"`
	}
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?jobName=legacy_job", nil), &page)
	ids := map[string]bool{}
	for _, r := range page.Rows {
		ids[r.ID] = r.Success && strings.HasPrefix(r.TaskID, "legacy_job@-@")
	}
	if page.Total != 2 || !ids["01a21467-f74f-8502-8b34-30970a0a5eed"] || !ids["01a21467-f74f-8487-8e85-7c9488914d00"] {
		t.Fatalf("the old executions: %+v", page)
	}
	var traces struct{ Total int }
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/events/statusTraces?jobName=legacy_job", nil), &traces)
	if traces.Total != 6 {
		t.Errorf("the old status traces: %d, want 6", traces.Total)
	}
	var regs []struct{ RegisteredCount int }
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/statistics/jobs/register", nil), &regs)
	if len(regs) == 0 || regs[0].RegisteredCount != 0 { // the old row of its day, counted when no job existed yet
		t.Errorf("the old registered-jobs statistics: %+v", regs)
	}
	// The hosted package is still served, and the job runs from it.
	resp, err := http.Get(s.base + a.AppURL[strings.Index(a.AppURL, "/packages/"):])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 413 {
		t.Fatalf("the hosted package: %d, %d bytes", resp.StatusCode, len(body))
	}
	s.must(http.MethodPost, "/api/job/trigger", "legacy_job")
	eventually(t, waitLong, func() bool {
		_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?jobName=legacy_job&isSuccess=true", nil), &page)
		return page.Total == 4
	}, "legacy_job to run again from its hosted package (two more successful executions)")
	// A new namespace beside the old data holds nothing of it.
	s.must(http.MethodPut, "/api/namespaces/pay", nil)
	if got := string(s.must(http.MethodGet, "/api/job/jobs?namespace=pay", nil)); strings.TrimSpace(got) != "[]" {
		t.Errorf("pay's jobs: %s", got)
	}
	if got := string(s.must(http.MethodGet, "/api/job/events/executions?namespace=pay", nil)); !strings.Contains(got, `"total":0`) {
		t.Errorf("pay's history: %s", got)
	}
}
