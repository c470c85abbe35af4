//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// A disabled job does not run on its cron while an enabled one does;
// enabling resumes it. Deregistering a running job kills its process and
// clears its queues.
func TestDisableEnableDeregister(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out, witness := outDir(t), outDir(t)
	every := func(name, out string) jobConfig {
		j := recorderJob(name, "rec", out, 1)
		j.Cron = "* * * * * ?"
		return j
	}
	s.registerJob(every("ticking", out))
	eventually(t, waitLong, func() bool { return countRuns(t, out) >= 1 }, "ticking to run on its cron")

	s.must(http.MethodPost, "/api/job/ticking/disable", nil)
	if got := string(s.must(http.MethodGet, "/api/job/ticking/disable", nil)); strings.TrimSpace(got) != "true" {
		t.Errorf("GET disable = %q, want true", got)
	}
	eventually(t, waitLong, func() bool { return len(s.running("ticking")) == 0 && s.ready("ticking") == 0 }, "disabled job to be idle")
	before := countRuns(t, out)
	// The witness fires on the same cron: three of its runs span at least
	// two fires the disabled job skipped.
	s.registerJob(every("witness", witness))
	eventually(t, waitLong, func() bool { return countRuns(t, witness) >= 3 }, "the witness to run 3 times")
	if n := countRuns(t, out); n != before {
		t.Errorf("disabled job ran %d times while disabled", n-before)
	}
	if code, body := s.do(http.MethodPost, "/api/job/trigger", "ticking"); code != http.StatusConflict {
		t.Errorf("trigger of a disabled job: %d %s, want 409", code, body)
	}

	s.must(http.MethodPost, "/api/job/ticking/enable", nil)
	eventually(t, waitLong, func() bool { return countRuns(t, out) >= before+2 }, "enabled job to run on its cron again")
	s.must(http.MethodPost, "/api/job/witness/disable", nil)
	s.must(http.MethodPost, "/api/job/ticking/disable", nil)

	// Deregister a running long job.
	long := outDir(t)
	j := recorderJob("long", "rec", long, 1)
	j.Props = map[string]string{"script.command.line": "bin/sleep.sh"}
	s.registerJob(j)
	pidFile := filepath.Join(long, "0.pid")
	s.triggerTaken("long", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid := pidOf(t, pidFile)
	if !alive(pid) {
		t.Fatalf("job process %d is not running", pid)
	}
	t.Cleanup(func() { // safety net: never leave a sleep 300 behind
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	eventually(t, waitLong, func() bool { return len(s.running("long")) == 1 }, "long to be listed running")
	s.trigger("long") // a pending execution while it runs
	if n := s.ready("long"); n != 1 {
		t.Errorf("ready count of long while it runs = %d, want 1", n)
	}
	s.must(http.MethodDelete, "/api/job/deregister", "long")
	eventually(t, waitLong, func() bool { return !alive(pid) }, "job process %d to be killed", pid)
	eventually(t, waitLong, func() bool { return s.idle("long") }, "long's queues to be cleared")
	if code, body := s.do(http.MethodGet, "/api/job/jobs/long", nil); code != http.StatusNotFound {
		t.Errorf("GET a deregistered job: %d %s, want 404", code, body)
	}
	if n := countRuns(t, long); n != 1 {
		t.Errorf("long ran %d times, want once (the pending execution is dropped)", n)
	}
}

// Apps and jobs survive kill -9 of the scheduler; the restarted scheduler
// runs the job again (single-file script app over a file URL).
func TestRestartDurability(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, schedOpts{dataDir: dataDir})
	out := outDir(t)
	s1.publishApp("single", fileURL(singleScript), "record.sh", true)
	j := recorderJob("durable", "single", out, 2)
	j.ShardingItemParameters = "0=x,1=y"
	s1.registerJob(j)
	s1.runAndWait("durable", out, 2)
	app1, job1 := s1.must(http.MethodGet, "/api/app/single", nil), s1.must(http.MethodGet, "/api/job/jobs/durable", nil)
	s1.kill9()

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	if app2 := s2.must(http.MethodGet, "/api/app/single", nil); !jsonEqual(app1, app2) {
		t.Errorf("app after restart = %s, before = %s", app2, app1)
	}
	if job2 := s2.must(http.MethodGet, "/api/job/jobs/durable", nil); !jsonEqual(job1, job2) {
		t.Errorf("job after restart = %s, before = %s", job2, job1)
	}
	runs := s2.runAndWait("durable", out, 4)
	if got := perItem(runs); got[0] != 2 || got[1] != 2 {
		t.Errorf("runs per item across the restart = %v, want 2 each", got)
	}
	uniqueTaskIDs(t, runs)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// Auth: anonymous 401, guest may read but not write (403), the admin may
// write with Basic and with a login token. A non-loopback listener without
// credentials refuses to start.
func TestAuth(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{extra: []string{"--auth-username", "admin", "--auth-password", "s3cret",
		"--auth-guest-username", "guest", "--auth-guest-password", "g-pass"}})
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	app := appConfig{AppName: "authapp", AppURL: fileURL(recorderTGZ), BootstrapScript: "bin/record.sh", CPUCount: 0.1, MemoryMB: 64}

	s.auth = nil
	if code, body := s.do(http.MethodGet, "/api/job/jobs", nil); code != http.StatusUnauthorized || !isJSONMessage(body) {
		t.Errorf("anonymous GET: %d %s, want 401 with a JSON message", code, body)
	}
	s.auth = basic("admin", "wrong")
	if code, _ := s.do(http.MethodGet, "/api/job/jobs", nil); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", code)
	}
	s.auth = basic("guest", "g-pass")
	if code, body := s.do(http.MethodGet, "/api/job/jobs", nil); code != http.StatusOK {
		t.Errorf("guest GET: %d %s, want 200", code, body)
	}
	if code, body := s.do(http.MethodPost, "/api/app", app); code != http.StatusForbidden || !isJSONMessage(body) {
		t.Errorf("guest POST: %d %s, want 403 with a JSON message", code, body)
	}
	s.auth = basic("admin", "s3cret")
	s.must(http.MethodPost, "/api/app", app)

	s.auth = nil
	var login struct{ Token, Role string }
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/login", map[string]string{"username": "admin", "password": "s3cret"}), &login); err != nil || login.Token == "" {
		t.Fatalf("login: %+v %v", login, err)
	}
	s.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+login.Token) }
	out := outDir(t)
	s.registerJob(recorderJob("authjob", "authapp", out, 1))
	s.runAndWait("authjob", out, 1)
	s.must(http.MethodPost, "/api/logout", nil)
	if code, _ := s.do(http.MethodGet, "/api/job/jobs", nil); code != http.StatusUnauthorized {
		t.Errorf("GET with a logged-out token: %d, want 401", code)
	}

	// 0.0.0.0 without credentials: refuses to start, saying why.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := exec.CommandContext(ctx, schedulerBin, "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--http-address", "0.0.0.0", "--http-port", strconv.Itoa(harness.FreePort(t)))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("scheduler on 0.0.0.0 without credentials started (killed after %v): %s", waitLong, stderr.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Errorf("scheduler on 0.0.0.0 without credentials: err %v, want a non-zero exit", err)
	}
	if msg := stderr.String(); !strings.Contains(msg, "auth_username") || !strings.Contains(msg, "0.0.0.0") {
		t.Errorf("refusal message does not explain itself: %q", msg)
	}
}

func isJSONMessage(b []byte) bool {
	var m struct{ Message string }
	return json.Unmarshal(b, &m) == nil && m.Message != ""
}

// Bad input is answered with 4xx JSON errors and loses nothing: the job
// registered before still runs.
func TestBadInputLosesNothing(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	good := recorderJob("keeper", "rec", out, 2)
	s.registerJob(good)
	before := s.must(http.MethodGet, "/api/job/jobs/keeper", nil)

	huge := `{"appName":"` + strings.Repeat("x", 2<<20) + `"}`
	withCron := func(cron string) jobConfig { j := recorderJob("badcron", "rec", out, 1); j.Cron = cron; return j }
	cases := []struct {
		name, method, path string
		body               any
		code               int
		mention            string
	}{
		{"malformed app", http.MethodPost, "/api/app", `{"appName":"x",`, 400, ""},
		{"malformed job", http.MethodPost, "/api/job/register", `{"jobName":`, 400, ""},
		{"bad cron", http.MethodPost, "/api/job/register", withCron("0/5 * * *"), 400, "cron"},
		{"bad cron field", http.MethodPost, "/api/job/register", withCron("99 * * * * ?"), 400, "cron"},
		{"unknown app", http.MethodPost, "/api/job/register", recorderJob("orphan", "no_such_app", out, 1), 0, "no_such_app"},
		{"unknown field", http.MethodPost, "/api/job/register", `{"jobName":"typo","appName":"rec","jobExecutionType":"TRANSIENT","shardingTotalCnt":1,"cpuCount":0.1,"memoryMB":32}`, 400, "shardingTotalCnt"},
		{"duplicate job", http.MethodPost, "/api/job/register", good, 409, "Job 'keeper' already existed."},
		{"overwrite via update with bad shards", http.MethodPut, "/api/job/update", `{"jobName":"keeper","shardingTotalCount":0}`, 400, ""},
		{"huge app body", http.MethodPost, "/api/app", huge, 413, ""},
		{"huge trigger body", http.MethodPost, "/api/job/trigger", huge, 413, ""},
		{"trigger unknown job", http.MethodPost, "/api/job/trigger", "no_such_job", 404, "no_such_job"},
	}
	for _, c := range cases {
		code, body := s.do(c.method, c.path, c.body)
		bad := code/100 != 4 || (c.code != 0 && code != c.code) || !isJSONMessage(body) || !strings.Contains(string(body), c.mention)
		if bad {
			if len(body) > 300 {
				body = body[:300]
			}
			t.Errorf("%s: %d %s, want %d (any 4xx if 0) with a JSON message mentioning %q", c.name, code, body, c.code, c.mention)
		}
	}
	if !s.healthy() {
		t.Fatal("scheduler unhealthy after bad input")
	}
	if after := s.must(http.MethodGet, "/api/job/jobs/keeper", nil); !jsonEqual(before, after) {
		t.Errorf("job changed by rejected requests: %s, was %s", after, before)
	}
	var all []json.RawMessage
	s.getJSON("/api/job/jobs", &all)
	if len(all) != 1 {
		t.Errorf("jobs after bad input: %d, want only keeper", len(all))
	}
	runs := s.runAndWait("keeper", out, 2)
	if got := perItem(runs); got[0] != 1 || got[1] != 1 {
		t.Errorf("keeper runs per item = %v, want 1 each", got)
	}
}

// `make run` uses --data-dir data, a relative path: the README's own
// set-up must run jobs.
func TestRelativeDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startScheduler(t, schedOpts{dir: dir, dataDir: "data"})
	s.dataDir = filepath.Join(dir, "data")
	out := outDir(t)
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	s.registerJob(recorderJob("rel", "rec", out, 1))
	s.triggerTaken("rel", func() bool { return countRuns(t, out) == 1 || len(s.failedTasks("rel")) > 0 })
	if f := s.failedTasks("rel"); len(f) > 0 {
		t.Fatalf("with a relative --data-dir the task fails: %s", f[0])
	}
	eventually(t, waitLong, func() bool { return s.idle("rel") }, "rel idle")
}

// A trigger sent right after the job's registration (the README's curl
// steps 2 and 3 back to back) must run the job. The API has stored the job
// and the ready entry, but the launcher, woken by the trigger, consults its
// catalog, which follows the store's watch and may not know the job yet:
// Runnable fails and dropStale deletes the ready entry, so the trigger is
// lost although the API answered 204.
func TestTriggerRightAfterRegister(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	const n = 20
	outs := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("quick_%d", i)
		outs[name] = outDir(t)
		s.registerJob(recorderJob(name, "rec", outs[name], 1))
		s.trigger(name)
	}
	var lost []string
	for _, name := range sortedKeys(outs) {
		out := outs[name]
		// Done: it ran; lost: idle (nothing ready or running) without a run.
		eventually(t, waitLong, func() bool { return countRuns(t, out) > 0 || (s.idle(name) && countRuns(t, out) == 0) },
			"job %s to run or be dropped", name)
		if countRuns(t, out) == 0 {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("BUG: %d of %d triggers sent right after registration were accepted (204) and dropped without a run: %v",
			len(lost), n, lost)
	}
}
