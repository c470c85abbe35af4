package soak

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

func TestParseRunPost(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 1, 0, time.UTC)
	start := "ev=start\ntask=sk001@-@0@-@READY@-@@-@x\njob=sk001\nitem=1\nsource=NORMAL_TRIGGER\ntype=TRANSIENT\nterm=7\nqueued=2026-11-27T08:00:00.5Z\nnominal=2026-11-27T08:00:00Z\nparam=soak 0 k3-sk001\n"
	l, daemon, err := parseRunPost([]byte(start), at)
	if err != nil {
		t.Fatal(err)
	}
	if daemon || l.Ev != runlog.Start || l.Job != "sk001" || l.Item != 1 || l.Term == nil || *l.Term != 7 || l.Source != "NORMAL_TRIGGER" ||
		!l.Queued.Equal(time.Date(2026, 11, 27, 8, 0, 0, 5e8, time.UTC)) || !l.Nominal.Equal(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)) || l.Param != "soak 0 k3-sk001" || !l.At.Equal(at) {
		t.Errorf("start: %+v daemon=%v", l, daemon)
	}
	l, _, err = parseRunPost([]byte("ev=end\ntask=t1\ntype=TRANSIENT\n"), at)
	if err != nil || l.Ev != runlog.End || l.State != "TASK_FINISHED" || l.Task != "t1" {
		t.Errorf("end: %+v %v", l, err)
	}
	l, _, err = parseRunPost([]byte("ev=start\ntask=t2\njob=j\nitem=0\nterm=\nqueued=\n"), at)
	if err != nil || l.Term != nil || !l.Queued.IsZero() || !l.Nominal.IsZero() {
		t.Errorf("a start without term and queued: %+v %v", l, err)
	}
	for _, bad := range []string{"ev=start\n", "task=t\n", "ev=begin\ntask=t\n", "ev=start\ntask=t\nitem=x\n", "ev=start\ntask=t\nitem=0\nterm=z\n",
		"ev=start\ntask=t\nitem=0\nqueued=yesterday\n", "ev=start\ntask=t\nitem=0\nnominal=yesterday\n"} {
		if _, _, err := parseRunPost([]byte(bad), at); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHTTPRecorderAppendsRuns: a transient task's start and end are two
// lines; a daemon task's ticks are one start and no end.
func TestHTTPRecorderAppendsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	r, err := startHTTPRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) int {
		resp, err := http.Post(r.url+"/run", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, b := range []string{"ev=start\ntask=t1\njob=j\nitem=0\ntype=TRANSIENT\n", "ev=end\ntask=t1\ntype=TRANSIENT\n",
		"ev=start\ntask=d1\njob=d\nitem=0\ntype=DAEMON\n", "ev=end\ntask=d1\ntype=DAEMON\n", "ev=start\ntask=d1\njob=d\nitem=0\ntype=DAEMON\n"} {
		if c := post(b); c != http.StatusOK {
			t.Fatalf("%q: %d", b, c)
		}
	}
	if c := post("ev=start\n"); c != http.StatusBadRequest {
		t.Errorf("a post without a task: %d, want 400", c)
	}
	resp, err := http.Get(r.url + "/app.tgz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("app: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Ev+" "+l.Task)
	}
	if want := "start t1,end t1,start d1"; strings.Join(got, ",") != want {
		t.Errorf("lines %q, want %q", strings.Join(got, ","), want)
	}
}

// TestHTTPRecorderLosesTheRunsOfACrashedNode: lose records each run started and not ended
// as ended TASK_LOST and drops what its task posts after; a run ended, a DAEMON's and a task
// that posted no start (a pod not started yet, which may start when its node is back) record
// nothing then, and the last is recorded as ever when it starts.
func TestHTTPRecorderLosesTheRunsOfACrashedNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	r, err := startHTTPRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) {
		resp, err := http.Post(r.url+"/run", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d", body, resp.StatusCode)
		}
	}
	for _, b := range []string{"ev=start\ntask=a\njob=j\nitem=0\ntype=TRANSIENT\n", "ev=start\ntask=b\njob=j\nitem=1\ntype=TRANSIENT\n",
		"ev=end\ntask=b\ntype=TRANSIENT\n", "ev=start\ntask=d\njob=d\nitem=0\ntype=DAEMON\n"} {
		post(b)
	}
	if err := r.lose([]string{"a", "b", "d", "p"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"ev=end\ntask=a\ntype=TRANSIENT\n", "ev=start\ntask=p\njob=j\nitem=2\ntype=TRANSIENT\n"} {
		post(b)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, strings.TrimSpace(l.Ev+" "+l.Task+" "+l.State))
	}
	if want := "start a,start b,end b TASK_FINISHED,start d,end a TASK_LOST,start p"; strings.Join(got, ",") != want {
		t.Errorf("lines %q, want %q", strings.Join(got, ","), want)
	}
}

// TestRunScriptReportsToTheRecorder runs the app's script as the executor
// would (its variables set) with busybox's wget: one start line with what
// the variables say, one end line.
func TestRunScriptReportsToTheRecorder(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("no /bin/busybox (apt-get install busybox-static)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.jsonl")
	r, err := startHTTPRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/busybox", filepath.Join(bin, "wget")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(runScript, "@URL@", r.url)), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SOAK_RUN_SECONDS=0", "ELASTICJOB_TASK_ID=sk002@-@1@-@READY@-@@-@u",
		"ELASTICJOB_JOB_NAME=sk002", "ELASTICJOB_SHARDING_ITEM=1", "ELASTICJOB_EXECUTION_SOURCE=MISFIRE",
		"ELASTICJOB_EXECUTION_TYPE=TRANSIENT", "ELASTICJOB_LEADER_TERM=12", "ELASTICJOB_QUEUED_AT=2026-11-27T09:00:10Z",
		"ELASTICJOB_JOB_PARAMETER=soak 0 k9-sk002"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v: %s", err, out)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want a start and an end: %+v", len(lines), lines)
	}
	s, e := lines[0], lines[1]
	if s.Ev != runlog.Start || s.Task != "sk002@-@1@-@READY@-@@-@u" || s.Job != "sk002" || s.Item != 1 || s.Source != "MISFIRE" ||
		s.Term == nil || *s.Term != 12 || !s.Queued.Equal(time.Date(2026, 11, 27, 9, 0, 10, 0, time.UTC)) || s.Param != "soak 0 k9-sk002" {
		t.Errorf("start %+v", s)
	}
	if e.Ev != runlog.End || e.Task != s.Task || e.State != "TASK_FINISHED" {
		t.Errorf("end %+v", e)
	}
}
