package ejctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/task"

	"github.com/ejcloud/elasticjob/api"
)

const appJSON = `{"appName":"demo","appURL":"http://repo/demo.tgz","bootstrapScript":"bin/start.sh","cpuCount":0.1,"memoryMB":64}`

func writeJob(t *testing.T, name string, shards int, cpu string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".yaml")
	y := "kind: Job\njobName: " + name + "\nappName: demo\nshardingTotalCount: " + itoa(shards) + "\ncpuCount: " + cpu + "\nmemoryMB: 32\n"
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func publishApp(t *testing.T, r *run) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.json")
	if err := os.WriteFile(p, []byte(appJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	r.must(0, "apply", "-f", p)
}

// The registration's Warning: 299 (an execution larger than the cluster)
// reaches the user on stderr, from job register and from apply (issue 30
// item 4); a job that fits registers without one.
func TestRegistrationWarningIsShown(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	s.ops.agents = []engine.Agent{{ID: "a1", CPUs: 2, MemMB: 4096}}
	r := s.cli(t)
	publishApp(t, r)
	_, errs := r.must(0, "job", "register", "-f", writeJob(t, "big", 3, "1"))
	has(t, "register of a job larger than the cluster", errs, "ejctl: warning: executions will wait until the cluster grows",
		"it needs 3.1 CPUs and 160 MB: 3 CPUs and 96 MB for the 3 shards, 0.1 CPUs and 64 MB for the app's executor")
	_, errs = r.must(0, "apply", "-f", writeJob(t, "big2", 4, "1"))
	has(t, "apply", errs, "ejctl: warning: executions will wait", "for the 4 shards")
	if _, errs = r.must(0, "job", "register", "-f", writeJob(t, "small", 2, "0.5")); strings.Contains(errs, "warning") {
		t.Errorf("a job that fits warned: %s", errs)
	}
}

func TestWarningText(t *testing.T) {
	for in, want := range map[string]string{
		`299 elasticjob "executions will wait"`:   "executions will wait",
		`299 - "a \"quoted\" word" "Sat, 01 Jan"`: `a "quoted" word`,
		`odd`: "odd",
	} {
		if got := warningText(in); got != want {
			t.Errorf("warningText(%q) = %q, want %q", in, got, want)
		}
	}
}

// whoami says the address, user and role, or that access is open; login
// on an open scheduler says so instead of prompting and accepting any
// password.
func TestWhoamiAndOpenLogin(t *testing.T) {
	open := newTestServer(t, api.Credentials{})
	r := open.cli(t)
	out, _ := r.must(0, "whoami")
	has(t, "whoami, open", out, open.url, "access is open")

	home := t.TempDir()
	r.env["HOME"] = home
	r.stdin = "anything\n"
	out, errs := r.must(0, "login", "-u", "admin", "--password-stdin")
	has(t, "login, open", out, "is open", "no login is needed")
	if strings.Contains(errs, "Password:") {
		t.Errorf("login prompted on an open scheduler: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "ejctl", "config.json")); !os.IsNotExist(err) {
		t.Errorf("login on an open scheduler saved a config file: %v", err)
	}

	locked := newTestServer(t, api.Credentials{AdminUser: "admin", AdminPassword: "pw", GuestUser: "viewer", GuestPassword: "look"})
	r = locked.cli(t)
	r.env["HOME"] = t.TempDir()
	_, errs, code := r.do("whoami")
	if code != ExitFailure || !strings.Contains(errs, "401") {
		t.Errorf("whoami without a login: exit %d %q", code, errs)
	}
	r.stdin = "look\n"
	_, errs = r.must(0, "login", "-u", "viewer", "--password-stdin")
	if strings.Contains(errs, "Password:") {
		t.Errorf("--password-stdin prompted: %q", errs)
	}
	out, _ = r.must(0, "whoami")
	has(t, "whoami, guest", out, locked.url, "user viewer", "role guest", "may only read")
}

// rm says what goes (an app's jobs), asks on a terminal, and needs --yes
// without one.
func TestRemoveConfirms(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	r := s.cli(t)
	publishApp(t, r)
	r.must(0, "job", "register", "-f", writeJob(t, "a_job", 1, "0.5"))
	r.must(0, "job", "register", "-f", writeJob(t, "b_job", 1, "0.5"))
	exists := func(path string) bool {
		_, _, code := r.do("app", "get", path)
		return code == 0
	}

	// The prompt says running tasks are killed (issue 57 item 13).
	if err := s.reg.Change().Launch("a_job", 0, task.Entry{TaskID: "a_job@-@0@-@READY@-@a1@-@u1", AgentID: "a1", State: "TASK_RUNNING"}).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, errs := r.must(ExitUsage, "app", "rm", "demo")
	has(t, "rm without a terminal", errs, "app demo and its 2 jobs a_job, b_job, killing their 1 running task", "--yes")
	r.tty, r.stdin = true, "n\n"
	_, errs = r.must(ExitFailure, "app", "rm", "demo")
	has(t, "rm answered no", errs, "Delete app demo and its 2 jobs a_job, b_job? Their 1 running task is killed. [y/N]", "nothing deleted")
	r.stdin = "n\n"
	_, errs = r.must(ExitFailure, "job", "rm", "b_job")
	has(t, "rm of a job with nothing running", errs, "Delete job b_job? Nothing of it runs now (a task that starts first is killed). [y/N]")
	if !exists("demo") {
		t.Fatal("an unconfirmed rm deleted the app")
	}
	_, errs = r.must(ExitFailure, "job", "rm", "nope")
	has(t, "rm of an unknown job", errs, "404")

	r.stdin = "y\n"
	out, _ := r.must(0, "job", "rm", "a_job")
	has(t, "rm answered yes", out, "deleted job a_job")
	r.tty = false
	out, _ = r.must(0, "app", "rm", "--yes", "demo")
	has(t, "rm --yes", out, "deleted app demo and its job b_job")
	if exists("demo") {
		t.Error("app still there after rm --yes")
	}
}

// history --since and --until take durations ago as well as times.
func TestHistorySinceDuration(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := s.cli(t)
	r.now = now
	for _, tc := range []struct{ in, want string }{
		{"1h", now.Add(-time.Hour).Local().Format(time.RFC3339)},
		{"30m", now.Add(-30 * time.Minute).Local().Format(time.RFC3339)},
		{"2d", now.Add(-48 * time.Hour).Local().Format(time.RFC3339)},
		{"1d12h", now.Add(-36 * time.Hour).Local().Format(time.RFC3339)},
		{"2026-02-01 00:00:00", "2026-02-01 00:00:00"},
	} {
		c := &cli{env: Env{Now: func() time.Time { return now }}}
		v, err := c.timeArg("--since", tc.in)
		if err != nil || !sameInstant(v, tc.want) {
			t.Errorf("--since %s = %q %v, want %s", tc.in, v, err, tc.want)
		}
	}
	r.must(0, "history", "--since", "1h", "--until", "5m")
	_, errs := r.must(ExitUsage, "history", "--since", "-1h")
	has(t, "a negative duration", errs, "must not be negative")
	_, errs = r.must(ExitFailure, "history", "--since", "yesterday")
	has(t, "not a time", errs, "400", "is not a time")
}

func sameInstant(a, b string) bool {
	ta, ea := time.Parse(time.RFC3339, a)
	tb, eb := time.Parse(time.RFC3339, b)
	if ea != nil || eb != nil {
		return a == b
	}
	return ta.Equal(tb)
}

// task files/download: a running task's directory listed, a file of it
// downloaded to stdout and to a file (never over an existing one); a
// task the scheduler never launched has none.
func TestTaskFilesAndDownload(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	r := s.cli(t)
	publishApp(t, r)
	r.must(0, "job", "register", "-f", writeJob(t, "multi", 1, "0.1"))
	id := "multi@-@0@-@READY@-@agent-1@-@u0"
	if err := s.reg.Change().Launch("multi", 0, task.Entry{TaskID: id, AgentID: "agent-1", State: "TASK_RUNNING"}).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.ops.logs[id+"/"+"work/report.txt"] = "shard 0 report\n"
	out, _ := r.must(0, "task", "files", id, "work")
	has(t, "files", out, "PATH", "work/report.txt", "-rw-------", "15")
	out, _ = r.must(0, "task", "download", id, "work/report.txt", "--to", "-")
	if out != "shard 0 report\n" {
		t.Errorf("download to stdout: %q", out)
	}
	to := filepath.Join(t.TempDir(), "r.txt")
	r.must(0, "task", "download", id, "work/report.txt", "--to", to)
	if b, err := os.ReadFile(to); err != nil || string(b) != "shard 0 report\n" {
		t.Errorf("downloaded file: %q %v", b, err)
	}
	r.must(1, "task", "download", id, "work/report.txt", "--to", to) // exists: not overwritten
	_, errs := r.must(1, "task", "files", "multi@-@0@-@READY@-@agent-1@-@made-up")
	has(t, "a made-up task", errs, "is unknown")
	_, errs = r.must(1, "task", "download", id, "../x", "--to", "-")
	has(t, "a path out", errs, "clean relative path")
}

// logs JOB prints every shard's log with a prefix (or the one --shard
// names), and --tail counts lines.
func TestLogsOfEveryShard(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	r := s.cli(t)
	publishApp(t, r)
	r.must(0, "job", "register", "-f", writeJob(t, "multi", 3, "0.1"))
	ids := map[int]string{0: "multi@-@0@-@READY@-@agent-1@-@u0", 2: "multi@-@2@-@READY@-@agent-1@-@u2"}
	for item, id := range ids {
		if err := s.reg.Change().Launch("multi", item, task.Entry{TaskID: id, AgentID: "agent-1", State: "TASK_RUNNING"}).Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	s.ops.logs[ids[0]] = "zero 1\nzero 2\nzero 3\n"
	s.ops.logs[ids[2]] = "two 1\ntwo 2\nunfinished"

	out, errs := r.must(0, "logs", "multi", "--tail", "2")
	want := "[shard 0] zero 2\n[shard 0] zero 3\n[shard 2] two 2\n[shard 2] unfinished\n"
	if out != want {
		t.Errorf("logs of every shard =\n%s\nwant\n%s", out, want)
	}
	has(t, "which tasks", errs, "shard 0: task "+ids[0], "shard 2: task "+ids[2], "--shard N prints one")

	out, _ = r.must(0, "logs", "multi", "--shard", "2", "--tail", "0")
	if out != s.ops.logs[ids[2]] {
		t.Errorf("--shard 2 --tail 0 = %q, want the whole log unprefixed", out)
	}
	out, _ = r.must(0, "logs", ids[0], "--tail", "1")
	if out != "zero 3\n" {
		t.Errorf("a task's last line = %q", out)
	}
	_, errs = r.must(ExitUsage, "logs", "multi", "--shard", "3")
	has(t, "a shard the job does not have", errs, "shards 0 to 2")
}

// A trigger whose idempotency key was used says so, with and without
// --wait (it follows the run the first trigger queued).
func TestTriggerRepeatedKey(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	r := s.cli(t)
	publishApp(t, r)
	r.must(0, "job", "register", "-f", writeJob(t, "keyed", 1, "0.1"))
	out, _ := r.must(0, "job", "trigger", "keyed", "--key", "k-1")
	has(t, "first trigger", out, "job keyed triggered")
	out, _ = r.must(0, "job", "trigger", "keyed", "--key", "k-1")
	has(t, "repeated key", out, "the key k-1 was already used by an earlier trigger", "nothing more queued")
	if strings.Contains(out, "triggered") {
		t.Errorf("a repeated key said triggered: %s", out)
	}
	_, errs, _ := r.do("job", "trigger", "keyed", "--key", "k-1", "--wait", "--timeout", "50ms", "--poll", "10ms")
	has(t, "repeated key with --wait", errs, "was already used by an earlier trigger", "following the run it queued")
}
