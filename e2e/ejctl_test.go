//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ejctlEnv runs the real bin/ejctl against one scheduler, with its own
// HOME and config file.
type ejctlEnv struct {
	t      *testing.T
	s      *scheduler
	home   string
	config string
}

func newEjctl(t *testing.T, s *scheduler) *ejctlEnv {
	home := t.TempDir()
	return &ejctlEnv{t: t, s: s, home: home, config: filepath.Join(home, ".config", "ejctl", "config.json")}
}

// run runs ejctl with stdin and returns stdout, stderr and the exit code.
func (e *ejctlEnv) run(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(ejctlBin, args...)
	cmd.Env = []string{"HOME=" + e.home, "EJCTL_ADDR=" + e.s.base, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("ejctl %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// must runs ejctl and fails the test unless it exits with want.
func (e *ejctlEnv) must(want int, args ...string) string {
	e.t.Helper()
	out, errs, code := e.run("", args...)
	if code != want {
		e.t.Fatalf("ejctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out + errs
}

func contains(t *testing.T, what, got string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(got, s) {
			t.Errorf("%s: %q missing in:\n%s", what, s, got)
		}
	}
}

// hookServer records the webhook notifications it receives.
type hookServer struct {
	mu     sync.Mutex
	bodies []string
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

func (h *hookServer) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.bodies, "\n")
}

// TestEjctl drives a scheduler with auth through the real ejctl binary:
// login, apply (idempotent, diff, dry run, prune), trigger --wait for a
// good and a failing run (exit codes), pauseAfterFailures with its webhook,
// the guide's aliases, tasks, logs, history and publish.
func TestEjctl(t *testing.T) {
	s := startScheduler(t, schedOpts{extra: []string{"--auth-username", "admin", "--auth-password", "s3cret", "--embedded-cpus", "4"}})
	s.auth = func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }
	e := newEjctl(t, s)
	hooks := &hookServer{}
	hookSrv := httptest.NewServer(hooks)
	t.Cleanup(hookSrv.Close)
	out := outDir(t)

	// Without a token: 401, the API's message and a hint; exit 1.
	_, errs, code := e.run("", "app", "ls")
	if code != 1 || !strings.Contains(errs, "401") || !strings.Contains(errs, "ejctl login") {
		t.Fatalf("unauthenticated ls: exit %d, stderr %s", code, errs)
	}
	if _, errs, code := e.run("s3cret\n", "login", "--username", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: exit %d: %s", code, errs)
	}
	if info, err := os.Stat(e.config); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("config file %s: %v %v, want mode 0600", e.config, info, err)
	}

	dir := t.TempDir()
	writeFile(t, dir, "app.yaml", "kind: App\nappName: ej_rec\nappURL: "+fileURL(recorderTGZ)+"\nbootstrapScript: bin/record.sh\ncpuCount: 0.1\nmemoryMB: 64\n")
	writeFile(t, dir, "jobs.yaml", "kind: Job\njobName: ej_ok\nappName: ej_rec\nshardingTotalCount: 2\ncpuCount: 0.1\nmemoryMB: 32\njobParameter: "+out+"\n"+
		"---\nkind: Job\njobName: ej_fail\nappName: ej_rec\njobType: SCRIPT\ncpuCount: 0.1\nmemoryMB: 32\nprops:\n  script.command.line: \"echo failing on purpose >&2; false\"\n")
	writeFile(t, dir, "pause.json", `{"jobName":"ej_pause","appName":"ej_rec","jobType":"SCRIPT","cpuCount":0.1,"memoryMB":32,"pauseAfterFailures":2,`+
		`"props":{"script.command.line":"false","webhook.url":"`+hookSrv.URL+`/hook"}}`)

	got := e.must(0, "apply", "-f", dir)
	contains(t, "first apply", got, "+ app ej_rec (create)", "+ job ej_ok (create)", "Applied: 4 created, 0 updated, 0 unchanged, 0 deleted, 0 failed.")
	got = e.must(0, "apply", "-f", dir)
	contains(t, "second apply", got, "Applied: 0 created, 0 updated, 4 unchanged")

	// A changed field: the dry run shows it and changes nothing; apply does.
	writeFile(t, dir, "jobs.yaml", strings.Replace(readFile(t, dir, "jobs.yaml"), "shardingTotalCount: 2", "shardingTotalCount: 2\ndescription: two shards", 1))
	got = e.must(0, "apply", "-f", dir, "--dry-run")
	contains(t, "dry run", got, "~ job ej_ok (update)", `description: "" → "two shards"`, "Plan (dry run, nothing changed): 0 to create, 1 to update")
	var job map[string]any
	s.getJSON("/api/job/jobs/ej_ok", &job)
	if job["description"] != "" {
		t.Fatalf("a dry run changed the job: %v", job)
	}
	e.must(0, "apply", "-f", dir)
	s.getJSON("/api/job/jobs/ej_ok", &job)
	if job["description"] != "two shards" {
		t.Fatalf("apply did not update the job: %v", job)
	}

	// Lists for people and for scripts.
	contains(t, "job ls", e.must(0, "job", "ls"), "ej_ok", "ej_rec", "TRANSIENT", "enabled")
	var jobs []map[string]any
	if err := json.Unmarshal([]byte(e.must(0, "job", "ls", "-o", "json")), &jobs); err != nil || len(jobs) != 3 {
		t.Fatalf("job ls -o json: %v %v", jobs, err)
	}

	// trigger --wait: a good run exits 0 with its shards' table…
	got = e.must(0, "job", "trigger", "ej_ok", "--wait", "--timeout", "2m", "--poll", "100ms")
	contains(t, "good run", got, "SUCCEEDED", "TASK_FINISHED")
	if n := countRuns(t, out); n != 2 {
		t.Fatalf("the good run ran %d shards, want 2", n)
	}
	// …a failing one exits 3 and says which shard.
	stdout, errs, code := e.run("", "job", "trigger", "ej_fail", "--wait", "--timeout", "2m", "--poll", "100ms")
	if code != 3 || !strings.Contains(stdout, "TASK_FAILED") || !strings.Contains(errs, "1 of 1 shard failed") {
		t.Fatalf("failing run: exit %d\nstdout %s\nstderr %s", code, stdout, errs)
	}
	contains(t, "logs of the failed run", e.must(0, "logs", "ej_fail", "--stream", "stderr"), "failing on purpose")
	contains(t, "logs of shard 1", e.must(0, "logs", "ej_ok", "--shard", "1"), "recorded shard 1")
	// A job's logs: every shard's, each line prefixed by its shard (issue 32).
	contains(t, "logs of every shard", e.must(0, "logs", "ej_ok", "--tail", "1"), "[shard 0] recorded shard 0", "[shard 1] recorded shard 1")
	contains(t, "whoami", e.must(0, "whoami"), s.base, "user admin, role admin")

	// A trigger repeating an idempotency key says so.
	e.must(0, "job", "trigger", "ej_ok", "--key", "e2e-key", "--wait", "--timeout", "2m", "--poll", "100ms")
	contains(t, "repeated key", e.must(0, "job", "trigger", "ej_ok", "--key", "e2e-key"), "the key e2e-key was already used")

	// The registration's Warning: 299 reaches stderr (8 CPUs on a 4-CPU agent).
	big := t.TempDir()
	writeFile(t, big, "big.yaml", "kind: Job\njobName: ej_big\nappName: ej_rec\nshardingTotalCount: 8\ncpuCount: 1\nmemoryMB: 32\n")
	_, errs, code = e.run("", "job", "register", "-f", filepath.Join(big, "big.yaml"))
	if code != 0 || !strings.Contains(errs, "ejctl: warning: executions will wait until the cluster grows") || !strings.Contains(errs, "for the 8 shards") {
		t.Fatalf("register of a job larger than the cluster: exit %d, stderr %s", code, errs)
	}
	// rm says what goes and wants --yes when there is no terminal to ask on.
	_, errs, code = e.run("", "job", "rm", "ej_big")
	if code != 2 || !strings.Contains(errs, "this deletes job ej_big; pass --yes") {
		t.Fatalf("rm without --yes: exit %d %s", code, errs)
	}
	contains(t, "rm --yes", e.must(0, "job", "rm", "ej_big", "--yes"), "deleted job ej_big")
	// History is written behind the registry (spooled, then batched into the
	// database within the writer's flush interval): the run shows there soon.
	// Its start and its end may land in different batches, so until the end
	// lands the row reads "running" (not successful, so --failed lists it).
	var hist string
	eventually(t, waitLong, func() bool {
		hist = e.must(0, "history", "--job", "ej_fail", "--failed")
		return strings.Contains(hist, "1 of 1 execution(s)") && !strings.Contains(hist, "running")
	}, "the failed run's end in history: %v", late(func() any { return hist }))
	contains(t, "history", hist, "ej_fail", "FAILED", "1 of 1 execution(s)")
	contains(t, "tasks", e.must(0, "tasks"), "RUNNING (0)", "READY (0)", "FAILOVER (0)")

	// pauseAfterFailures=2: two failed runs pause the job, say why, notify.
	for range 2 {
		e.must(3, "job", "trigger", "ej_pause", "--wait", "--timeout", "2m", "--poll", "100ms")
	}
	var st map[string]any
	eventually(t, waitLong, func() bool { s.getJSON("/api/jobs/ej_pause/status", &st); return st["state"] == "PAUSED" }, "ej_pause paused: %v", late(func() any { return st }))
	p, _ := st["pause"].(map[string]any)
	if p == nil || p["failedRuns"] != 2.0 || !strings.Contains(p["reason"].(string), "paused after 2 failed runs in a row") {
		t.Fatalf("pause record: %v", st)
	}
	contains(t, "job ls of a paused job", e.must(0, "job", "ls"), "paused after 2 failed runs")
	_, errs, code = e.run("", "job", "trigger", "ej_pause")
	if code != 1 || !strings.Contains(errs, "disabled") {
		t.Fatalf("trigger of a paused job: exit %d %s", code, errs)
	}
	eventually(t, waitLong, func() bool { return strings.Contains(hooks.all(), "JOB_PAUSED") }, "a JOB_PAUSED webhook: %v", late(func() any { return hooks.all() }))
	e.must(0, "job", "enable", "ej_pause")
	st = nil // a fresh map: Unmarshal into a used one keeps absent members
	s.getJSON("/api/jobs/ej_pause/status", &st)
	if st["state"] != "READY" || st["pause"] != nil {
		t.Fatalf("after enable: %v", st)
	}

	// The guide's aliases, as curl sends them.
	var ans map[string]any
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/jobs/ej_ok/pause", nil), &ans); err != nil || ans["status"] != "success" || ans["message"] != "Job [ej_ok] paused." {
		t.Fatalf("pause alias: %v %v", ans, err)
	}
	s.must(http.MethodPost, "/api/jobs/ej_ok/resume", nil)
	s.must(http.MethodPost, "/api/jobs/ej_ok/start", nil)
	eventually(t, waitLong, func() bool { return countRuns(t, out) == 6 }, "the started run: %v runs", late(func() any { return countRuns(t, out) }))

	// Publish a directory: the app is created and runs from the uploaded package.
	app := t.TempDir()
	writeFile(t, app, "bin/run.sh", "#!/bin/sh\necho published \"$ELASTICJOB_SHARDING_ITEM\" >> \"$ELASTICJOB_JOB_PARAMETER/published.log\"\n")
	if err := os.Chmod(filepath.Join(app, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	got = e.must(0, "app", "publish", app, "--name", "ej_pub", "--bootstrap", "bin/run.sh", "--cpu", "0.1", "--mem", "64")
	contains(t, "publish", got, "app ej_pub created", "sha256")
	first := e.must(0, "app", "get", "ej_pub", "-o", "json")
	got = e.must(0, "app", "publish", app, "--name", "ej_pub", "-o", "json")
	var pub map[string]any
	if err := json.Unmarshal([]byte(got), &pub); err != nil || pub["created"] != false || !strings.Contains(first, pub["sha256"].(string)) {
		t.Fatalf("republishing the same tree must give the same package: %v %v\nfirst %s", pub, err, first)
	}
	s.registerJob(recorderJob("ej_pub_job", "ej_pub", out, 1))
	e.must(0, "job", "trigger", "ej_pub_job", "--wait", "--timeout", "2m", "--poll", "100ms")
	if b, err := os.ReadFile(filepath.Join(out, "published.log")); err != nil || strings.TrimSpace(string(b)) != "published 0" {
		t.Fatalf("the published app did not run: %q %v", b, err)
	}

	// --prune: listed, refused without --yes, done with it.
	os.Remove(filepath.Join(dir, "pause.json"))
	stdout, errs, code = e.run("", "apply", "-f", dir, "--prune")
	if code != 2 || !strings.Contains(stdout, "- job ej_pause (delete)") || !strings.Contains(stdout, "- app ej_pub (delete)") || !strings.Contains(errs, "--yes") {
		t.Fatalf("prune without --yes: exit %d\n%s\n%s", code, stdout, errs)
	}
	s.getJSON("/api/job/jobs/ej_pause", &job) // still there
	got = e.must(0, "apply", "-f", dir, "--prune", "--yes")
	contains(t, "prune", got, "Applied: 0 created, 0 updated, 3 unchanged, 3 deleted, 0 failed.")
	if code, _ := s.do(http.MethodGet, "/api/job/jobs/ej_pause", nil); code != http.StatusNotFound {
		t.Fatalf("pruned job still there: %d", code)
	}

	// Usage errors exit 2; completion scripts are generated.
	e.must(2, "job", "trigger")
	e.must(2, "nosuch")
	contains(t, "completion", e.must(0, "completion", "bash"), "__start_ejctl")
	contains(t, "completion", e.must(0, "completion", "zsh"), "#compdef ejctl")
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
