package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// fakeScheduler takes pod reports, refusing the first of each with 503 (the executor
// retries) and any without the right token.
type fakeScheduler struct {
	mu      sync.Mutex
	reports []engine.ExecutorReport
	refused int
}

func (f *fakeScheduler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != ReportPath || r.Header.Get(TokenHeader) != "tok" {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	var rep engine.ExecutorReport
	_ = json.NewDecoder(r.Body).Decode(&rep)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refused < 1 {
		f.refused++
		http.Error(w, "not leading yet", http.StatusServiceUnavailable)
		return
	}
	f.reports = append(f.reports, rep)
	w.WriteHeader(http.StatusNoContent)
}

func podEnv(t *testing.T, sched string, td jobs.TaskData) []string {
	return []string{"ELASTICJOB_TASK_ID=" + td.ShardingContext.TaskID, "ELASTICJOB_TASK_DATA=" + string(td.Marshal()),
		"ELASTICJOB_REPORT_URLS=http://127.0.0.1:1," + sched, "ELASTICJOB_REPORT_TOKEN=tok", "ELASTICJOB_EXECUTOR_ID=a@-@n1",
		"ELASTICJOB_NODE_NAME=n1", "ELASTICJOB_SANDBOX=" + t.TempDir(), "PATH=/usr/bin:/bin"}
}

func scriptTask(line string) jobs.TaskData {
	tid := jobs.NewTaskID("j", 0, jobs.KindReady, "n1").String()
	return jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j", TaskID: tid, ShardingTotalCount: 1},
		Job:             jobs.Config{JobName: "j", JobType: jobs.TypeScript, JobExecutionType: jobs.Transient, ShardingTotalCount: 1, Props: map[string]string{"script.command.line": line}},
		App:             app.Config{AppName: "a"},
		ExecutionSource: jobs.SourceNormal}
}

// TestPodMainReports: in a pod the executor runs its task and reports RUNNING, then the end
// with the output's tails, straight to the scheduler (the first URL down, the first answer a
// 503: both retried); the container's stdout carries the job's output.
func TestPodMainReports(t *testing.T) {
	fs := &fakeScheduler{}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	td := scriptTask("echo out-line; echo err-line >&2; true")
	var stdout, stderr bytes.Buffer
	if err := PodMain(context.Background(), podEnv(t, srv.URL, td), &stdout, &stderr); err != nil {
		t.Fatalf("PodMain: %v (%s)", err, stderr.String())
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.reports) != 2 || fs.reports[0].State != "TASK_RUNNING" || fs.reports[1].State != "TASK_FINISHED" {
		t.Fatalf("reports %+v", fs.reports)
	}
	end := fs.reports[1]
	if end.TaskID != td.ShardingContext.TaskID || end.AgentID != "n1" || end.ExecutorID != "a@-@n1" ||
		end.Stdout != "out-line" || end.Stderr != "err-line" {
		t.Errorf("final report %+v", end)
	}
	var r Report
	if err := json.Unmarshal(end.Data, &r); err != nil || r.CompleteTime == nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("report data %s (%v)", end.Data, err)
	}
	if !strings.Contains(stdout.String(), "out-line") {
		t.Errorf("container stdout %q", stdout.String())
	}
}

func TestPodMainFailure(t *testing.T) {
	fs := &fakeScheduler{refused: 1}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	err := PodMain(context.Background(), podEnv(t, srv.URL, scriptTask("echo boom >&2; exit 4; true")), &stdout, &stderr)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.State != Failed {
		t.Fatalf("PodMain: %v, want an ExitError for a failed task", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	last := fs.reports[len(fs.reports)-1]
	if last.State != "TASK_FAILED" || !strings.Contains(last.Message, "exit code 4") || last.Stderr != "boom" {
		t.Errorf("final report %+v", last)
	}
}

func TestParsePodSettingsErrors(t *testing.T) {
	_, err := ParsePodSettings(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "ELASTICJOB_TASK_ID") {
		t.Errorf("empty environment: %v", err)
	}
	env := map[string]string{"ELASTICJOB_TASK_ID": "x", "ELASTICJOB_TASK_DATA": "{}", "ELASTICJOB_REPORT_URLS": "http://s",
		"ELASTICJOB_MEMORY_LIMIT_MB": "lots"}
	if _, err := ParsePodSettings(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "ELASTICJOB_MEMORY_LIMIT_MB") {
		t.Errorf("bad memory limit: %v", err)
	}
}

// The init container of an app with its own image installs the executor and, when the
// executor image holds it, the Java library beside it, where the installed executor finds it.
func TestInstallCopiesTheJavaLibrary(t *testing.T) {
	src := t.TempDir()
	self, jar := filepath.Join(src, "elasticjob-executor"), filepath.Join(src, JavaJarName)
	if err := os.WriteFile(self, []byte("executor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jar, []byte("PK\x03\x04library"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "bin", "elasticjob-executor")
	if err := install(self, jar, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "executor" {
		t.Fatalf("executor %q %v", b, err)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Fatalf("executor mode %v", st.Mode())
	}
	found, err := FindJavaJar("", filepath.Dir(dst))
	if err != nil || found != filepath.Join(filepath.Dir(dst), JavaJarName) {
		t.Fatalf("the installed executor finds %q (%v)", found, err)
	}
	if b, _ := os.ReadFile(found); string(b) != "PK\x03\x04library" {
		t.Fatalf("library %q", b)
	}
	// Without a library (an executor image built where no JDK was) only the executor.
	dst2 := filepath.Join(t.TempDir(), "elasticjob-executor")
	if err := install(self, "", dst2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst2), JavaJarName)); !os.IsNotExist(err) {
		t.Fatalf("a library appeared: %v", err)
	}
	if err := install(filepath.Join(src, "missing"), "", dst2); err == nil || !strings.Contains(err.Error(), "install the executor") {
		t.Fatalf("a missing executor: %v", err)
	}
}
