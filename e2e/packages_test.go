//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// versionedRecorder is the recorder app whose record.sh also appends its
// version to OUT/version, so a run shows which package it came from.
func versionedRecorder(version string) []byte {
	script := "#!/bin/sh\n" + recordPrologue + "echo " + version + " >> \"$OUT/version\"\n"
	return mustTarGz(harness.Scripts(map[string]string{"bin/record.sh": script})...)
}

type packageAnswer struct {
	AppName string `json:"appName"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	AppURL  string `json:"appURL"`
}

// uploadPackage PUTs content as the app's package (raw body, checksum header).
func (s *scheduler) uploadPackage(appName string, content []byte) packageAnswer {
	s.t.Helper()
	sum := sha256.Sum256(content)
	req, err := http.NewRequest(http.MethodPut, s.base+"/api/app/"+appName+"/package?filename=recorder.tar.gz", bytes.NewReader(content))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Content-SHA256", hex.EncodeToString(sum[:]))
	if s.auth != nil {
		s.auth(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans packageAnswer
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &ans) != nil {
		s.t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	if ans.SHA256 != hex.EncodeToString(sum[:]) || ans.Size != int64(len(content)) || ans.AppName != appName {
		s.t.Fatalf("upload answered %+v", ans)
	}
	return ans
}

func versions(t *testing.T, out string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(out, "version"))
	return strings.Join(strings.Fields(string(b)), ",")
}

// A job runs from a package uploaded to the scheduler: the app's appURL is
// replaced by the scheduler's own http URL on 127.0.0.1, the executor
// fetches it from there, a new version is fetched and run, and a re-upload
// of the same content changes nothing.
func TestJobRunsFromHostedPackage(t *testing.T) {
	s := startScheduler(t, schedOpts{})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "hosted", "bootstrapScript": "bin/record.sh", "cpuCount": 0.1, "memoryMB": 64})
	v1 := s.uploadPackage("hosted", versionedRecorder("v1"))
	if !strings.HasPrefix(v1.AppURL, s.base+"/packages/"+v1.SHA256+"/") {
		t.Fatalf("appURL = %s, want this scheduler's package URL", v1.AppURL)
	}
	var a appConfig
	s.getJSON("/api/app/hosted", &a)
	if a.AppURL != v1.AppURL {
		t.Fatalf("app's appURL = %s, want %s", a.AppURL, v1.AppURL)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "packages", v1.SHA256)); err != nil {
		t.Fatalf("package not in data_dir/packages: %v", err)
	}
	out := outDir(t)
	s.registerJob(recorderJob("hosted_job", "hosted", out, 2))
	runs := s.runAndWait("hosted_job", out, 2)
	if got := versions(t, out); got != "v1,v1" || len(perItem(runs)) != 2 {
		t.Fatalf("first run: versions %q, runs %v", got, runs)
	}

	if again := s.uploadPackage("hosted", versionedRecorder("v1")); again.AppURL != v1.AppURL {
		t.Fatalf("re-upload of the same content: appURL %s, want %s", again.AppURL, v1.AppURL)
	}
	v2 := s.uploadPackage("hosted", versionedRecorder("v2"))
	if v2.SHA256 == v1.SHA256 || v2.AppURL == v1.AppURL {
		t.Fatalf("v2 = %+v, v1 = %+v", v2, v1)
	}
	s.runAndWait("hosted_job", out, 4)
	if got := versions(t, out); got != "v1,v1,v2,v2" {
		t.Fatalf("after uploading v2: versions %q, want v1,v1,v2,v2", got)
	}
	ents, _ := os.ReadDir(filepath.Join(s.dataDir, "packages"))
	if len(ents) != 2 {
		t.Fatalf("data_dir/packages holds %d entries, want v1 and v2 (v1 is collected after package_gc_grace)", len(ents))
	}
}

// An HTTP job needs no app with a package: one naming no app at all and one
// whose app has no appURL both run (under small executors).
func TestHTTPJobsWithoutPackage(t *testing.T) {
	calls := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls <- r.URL.Path
	}))
	defer srv.Close()
	s := startScheduler(t, schedOpts{})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "no_pkg", "bootstrapScript": "unused.sh", "cpuCount": 0.1, "memoryMB": 32})
	for _, j := range []struct{ name, app string }{{"http_no_app", ""}, {"http_bare_app", "no_pkg"}} {
		s.must(http.MethodPost, "/api/job/register", map[string]any{
			"jobName": j.name, "appName": j.app, "jobExecutionType": "TRANSIENT", "shardingTotalCount": 1,
			"cpuCount": 0.1, "memoryMB": 16, "jobType": "HTTP", "props": map[string]string{"http.url": srv.URL + "/" + j.name},
		})
		s.triggerTaken(j.name, func() bool { return len(calls) > 0 })
		if got := <-calls; got != "/"+j.name {
			t.Fatalf("endpoint called at %s, want /%s", got, j.name)
		}
		eventually(t, waitLong, func() bool { return s.idle(j.name) }, "job %s to finish", j.name)
		if f := s.failedTasks(j.name); len(f) != 0 {
			t.Fatalf("job %s failed: %v", j.name, f)
		}
	}
}
