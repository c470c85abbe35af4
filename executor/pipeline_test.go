package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/executor/process"
	"github.com/ejcloud/elasticjob/jobs"
)

const taskID = "job@-@1@-@READY@-@agent-1@-@u"

func runTask(t *testing.T, p *Pipeline, data []byte) (Outcome, bool) {
	t.Helper()
	running := false
	out := p.Run(t.Context(), taskID, data, Hooks{Running: func() { running = true }})
	return out, running
}

func stdout(t *testing.T, p *Pipeline) string {
	return readFile(t, filepath.Join(p.Sandbox, "tasks", taskID, "stdout"))
}

func TestEnvironmentAndContextArgument(t *testing.T) {
	p := newPipeline(t)
	url := scriptURL(t, "run.sh", "#!/bin/sh\nenv | grep ^ELASTICJOB_ | sort\nfor a; do echo \"arg=$a\"; done\n")
	out, running := runTask(t, p, taskData(url, "run.sh first", 1, nil))
	if out.State != Finished || out.Message != "" || out.ExitCode == nil || *out.ExitCode != 0 || !running {
		t.Fatalf("%+v running=%v", out, running)
	}
	got := stdout(t, p)
	var sc jobs.ShardingContext
	ctxJSON := got[strings.Index(got, "ELASTICJOB_SHARDING_CONTEXT=")+len("ELASTICJOB_SHARDING_CONTEXT=") : strings.Index(got, "\nELASTICJOB_SHARDING_ITEM")]
	if err := json.Unmarshal([]byte(ctxJSON), &sc); err != nil || sc.ShardingItem != 1 || sc.JobName != "job" {
		t.Fatalf("context %q: %+v %v", ctxJSON, sc, err)
	}
	for _, want := range []string{
		"ELASTICJOB_EXECUTION_SOURCE=NORMAL_TRIGGER", "ELASTICJOB_JOB_NAME=job", "ELASTICJOB_JOB_PARAMETER=p=1",
		"ELASTICJOB_SHARDING_ITEM=1", "ELASTICJOB_SHARDING_PARAMETER=Beijing", "ELASTICJOB_SHARDING_TOTAL_COUNT=2",
		"ELASTICJOB_TASK_ID=" + taskID, "arg=first\narg=" + ctxJSON + "\n",
		"ELASTICJOB_TASK_DIR=" + filepath.Join(p.Sandbox, "tasks", taskID, "work") + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q:\n%s", want, got)
		}
	}
}

// TestEachShardWritesInItsOwnDirectory: two shards of one job write
// report.txt in $ELASTICJOB_TASK_DIR, each its own (issue 68: in the
// shared working directory one overwrote the other).
func TestEachShardWritesInItsOwnDirectory(t *testing.T) {
	p := newPipeline(t)
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho \"shard $ELASTICJOB_SHARDING_ITEM\" > \"$ELASTICJOB_TASK_DIR/report.txt\"\n")
	ids := []string{"job@-@0@-@READY@-@agent-1@-@a", "job@-@1@-@READY@-@agent-1@-@b"}
	for i, id := range ids {
		if out := p.Run(t.Context(), id, taskData(url, "run.sh", i, nil), Hooks{}); out.State != Finished {
			t.Fatalf("shard %d: %+v", i, out)
		}
	}
	for i, id := range ids {
		if got := readFile(t, filepath.Join(p.Sandbox, "tasks", id, "work", "report.txt")); got != fmt.Sprintf("shard %d\n", i) {
			t.Errorf("shard %d's report: %q", i, got)
		}
	}
}

func TestScriptCommandLine(t *testing.T) {
	p := newPipeline(t)
	url := scriptURL(t, "run.sh", "#!/bin/sh\nexit 1\n")
	out, _ := runTask(t, p, taskData(url, "run.sh", 0, map[string]string{"script.command.line": `printf '%s|' "it's" "$ELASTICJOB_SHARDING_ITEM"; echo`}))
	if out.State != Finished {
		t.Fatalf("%+v", out)
	}
	if got := stdout(t, p); !strings.HasPrefix(got, `it's|0|{"jobName":"job"`) {
		t.Fatalf("stdout %q", got)
	}
}

func TestSingleTopLevelDirectoryAndBackslashes(t *testing.T) {
	p := newPipeline(t)
	url := tgzURL(t,
		tarEnt{"my-job/bin/start.sh", "#!/bin/sh\necho \"$(basename $(pwd)) $1\"\n", 0o755},
		tarEnt{"my-job/lib/x.jar", "jar", 0o644})
	out, _ := runTask(t, p, taskData(url, `bin\start.sh hello`, 0, nil))
	if out.State != Finished || stdout(t, p) != "my-job hello\n" {
		t.Fatalf("%+v %q", out, stdout(t, p))
	}
}

func TestNonExecutableScriptRunsWithSh(t *testing.T) {
	p := newPipeline(t)
	url := tgzURL(t, tarEnt{"bin/start.sh", "echo via sh\n", 0o644})
	out, _ := runTask(t, p, taskData(url, "bin/start.sh", 0, nil))
	if out.State != Finished || stdout(t, p) != "via sh\n" {
		t.Fatalf("%+v %q", out, stdout(t, p))
	}
}

func TestFailureMessages(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cases := map[string]struct {
		url, bootstrap, want string
	}{
		"missing script": {tgzURL(t, tarEnt{"my-job/bin/start.sh", "", 0o755}), "bin/stop.sh", "bootstrap script bin/stop.sh not found in the app"},
		"exit code":      {scriptURL(t, "fail.sh", "#!/bin/sh\necho boom >&2\nexit 3\n"), "fail.sh", "exit code 3: boom"},
		"signal":         {scriptURL(t, "segv.sh", "#!/bin/sh\nkill -SEGV $$\n"), "segv.sh", "terminated by signal SIGSEGV"},
		"fetch 404":      {srv.URL + "/app.tar.gz", "bin/start.sh", "fetch " + srv.URL + "/app.tar.gz: 404 Not Found"},
		"hostile":        {tgzURL(t, tarEnt{"../evil", "x", 0o644}), "bin/start.sh", `extract app.tar.gz: entry "../evil" escapes the extraction directory`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, _ := runTask(t, newPipeline(t), taskData(tc.url, tc.bootstrap, 0, nil))
			if out.State != Failed || out.Message != tc.want {
				t.Fatalf("got %+v, want %q", out, tc.want)
			}
		})
	}
	if out, _ := runTask(t, newPipeline(t), []byte("{")); out.State != Failed || !strings.Contains(out.Message, "not valid JSON") {
		t.Fatalf("bad payload: %+v", out)
	}
}

// TestNotAnArchiveFailsTheTask: 2 KB of random bytes named app.tgz, or a
// text file, is not run by /bin/sh (the trial's "Syntax error: EOF in
// backquote substitution"): the task fails before any process starts, with
// a cause that names the problem.
func TestNotAnArchiveFailsTheTask(t *testing.T) {
	random := make([]byte, 2048)
	rand.NewChaCha8([32]byte{5}).Read(random) // 2 KB of (fixed) random bytes
	random[0] = '`'
	for name, body := range map[string]string{"app.tgz": string(random), "notes.txt": "this is not a script\n"} {
		out, running := runTask(t, newPipeline(t), taskData(scriptURL(t, name, body), "bin/start.sh", 0, nil))
		if out.State != Failed || running || out.ExitCode != nil ||
			!strings.HasPrefix(out.Message, "extract "+name+": the package is not a tar, tar.gz or zip archive") {
			t.Errorf("%s: %+v running=%v", name, out, running)
		}
	}
}

func TestKillDuringRun(t *testing.T) {
	p := newPipeline(t)
	url := scriptURL(t, "sleep.sh", "#!/bin/sh\nexec sleep 1000\n")
	ctx, cancel := context.WithCancelCause(t.Context())
	out := p.Run(ctx, taskID, taskData(url, "sleep.sh", 0, nil), Hooks{Running: func() { cancel(process.Kill{Grace: 0}) }})
	if out.State != Killed || out.Message != "killed" {
		t.Fatalf("%+v", out)
	}
}

func TestAppExtractedOncePerChecksum(t *testing.T) {
	p := newPipeline(t)
	url := tgzURL(t, tarEnt{"bin/start.sh", "#!/bin/sh\n", 0o755})
	for range 2 {
		if out, _ := runTask(t, p, taskData(url, "bin/start.sh", 0, nil)); out.State != Finished {
			t.Fatalf("%+v", out)
		}
	}
	apps, _ := filepath.Glob(filepath.Join(p.Sandbox, "apps", "[0-9a-f]*"))
	if len(apps) != 1 {
		t.Fatalf("apps: %v", apps)
	}
}

// The launching term, the queued instant and the nominal instant, when the payload has them,
// reach the job (the fault soak's checker reads them).
func TestLeaderTermAndQueuedAtReachTheJob(t *testing.T) {
	p := newPipeline(t)
	url := scriptURL(t, "run.sh", "#!/bin/sh\nenv | grep ^ELASTICJOB_ | sort\n")
	td, err := jobs.UnmarshalTaskData(taskData(url, "run.sh", 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	term := int64(0) // the first term's sequence is 0: still passed
	td.Term, td.Queued = &term, time.Date(2026, 11, 27, 3, 0, 4, 0, time.UTC)
	td.Nominal = time.Date(2026, 11, 27, 3, 0, 2, 0, time.UTC) // committed late
	if out, _ := runTask(t, p, td.Marshal()); out.State != Finished {
		t.Fatalf("%+v", out)
	}
	got := stdout(t, p)
	for _, want := range []string{"ELASTICJOB_LEADER_TERM=0\n", "ELASTICJOB_QUEUED_AT=2026-11-27T03:00:04Z\n", "ELASTICJOB_NOMINAL_AT=2026-11-27T03:00:02Z\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q:\n%s", want, got)
		}
	}
}
