//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
)

// taskOutputs maps the task id of every task stdout in the embedded
// agent's sandboxes to the file's path.
func taskOutputs(t testing.TB, dataDir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "mesos", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "tasks", "*", "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[filepath.Base(filepath.Dir(f))] = f
	}
	return out
}

func keysOf(m map[string]string) string { return strings.Join(sortedKeys(m), ",") }

// settled returns snap() at a moment the job is idle and its output did not
// change across the idle check, so no execution is half-recorded.
func (s *scheduler) settled(job string, snap func() string) string {
	s.t.Helper()
	var got string
	eventually(s.t, waitLong, func() bool {
		a := snap()
		if !s.idle(job) {
			return false
		}
		got = snap()
		return a == got
	}, "job %s to be idle with stable output", job)
	return got
}

// readmeBlocks returns the shell blocks of the README's Walk-through
// section, in order.
func readmeBlocks(t *testing.T) []string { return docBlocks(t, "../README.md", "Walk-through") }

// docBlocks returns the shell blocks of a section ("## heading") of a
// Markdown file, in order.
func docBlocks(t *testing.T, file, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("%s has no ## %s section", file, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```sh\n")
		if !ok {
			return blocks
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatalf("%s: a ```sh block is not closed", file)
		}
		blocks, section = append(blocks, block), after
	}
}

// runBlock runs one README block with bash -e against the scheduler: its
// address for 127.0.0.1:8899 (EJCTL_ADDR for ejctl), the built ejctl for bin/ejctl, taskID for
// the placeholder the reader pastes a task id into.
func (s *scheduler) runBlock(dir, block, taskID string) string {
	s.t.Helper()
	script := strings.NewReplacer("http://127.0.0.1:8899", s.base, "bin/ejctl", ejctlBin, "paste a task id here", taskID).Replace(block)
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EJCTL_CONFIG="+filepath.Join(dir, "ejctl.json"), "EJCTL_ADDR="+s.base, "TASK_ID="+taskID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("README block failed: %v\n%s\noutput:\n%s", err, script, out)
	}
	return string(out)
}

// The README walk-through, run as written: its curl commands (the
// manual's bodies) and bin/ejctl commands against a scheduler, from a
// directory holding examples/dist/demo-app.tar.gz as make builds it; then
// what each shard did, from its stdout, and that the clean-up removed the
// job and the app.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "examples", "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fixture(demoApp), filepath.Join(dir, "examples", "dist", "demo-app.tar.gz")); err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t)
	if len(blocks) != 7 {
		t.Fatalf("the README walk-through has %d shell blocks, this test knows 7: publish, register, trigger, watch, a task's log, ejctl, clean up", len(blocks))
	}
	for _, step := range []struct{ name, contains string }{{"publish", "/api/app"}, {"register", "/api/job/register"}, {"trigger", "/api/job/trigger"},
		{"watch", "/api/job/tasks/running"}, {"task log", "paste a task id here"}, {"ejctl", "bin/ejctl job trigger my_job --wait"}, {"clean up", "deregister"}} {
		if !strings.Contains(blocks[0], step.contains) {
			t.Fatalf("README walk-through: the %s block does not contain %q:\n%s", step.name, step.contains, blocks[0])
		}
		blocks = blocks[1:]
	}
	blocks = readmeBlocks(t)
	for _, b := range blocks[:3] {
		s.runBlock(dir, b, "")
	}
	// The trigger and at least one cron fire: two executions, six tasks.
	eventually(t, waitLong, func() bool { return len(taskOutputs(t, s.dataDir)) >= 6 },
		"two executions of my_job (tasks seen at the deadline: %v)", late(func() any { return keysOf(taskOutputs(t, s.dataDir)) }))
	watch := s.runBlock(dir, blocks[3], "")
	if strings.Count(watch, "[") < 3 {
		t.Errorf("the watch block printed no three JSON lists:\n%s", watch)
	}

	// Step 5: a task id from history, pasted.
	var hist struct {
		Rows []struct{ TaskID string } `json:"rows"`
	}
	eventually(t, waitLong, func() bool {
		s.getJSON("/api/job/events/executions?jobName=my_job&isSuccess=true", &hist)
		return len(hist.Rows) > 0
	}, "a finished execution of my_job in history")
	out := s.runBlock(dir, blocks[4], hist.Rows[0].TaskID)
	contains(t, "the task log block", out, "job=my_job shard=", "context={", `"taskId":"`+hist.Rows[0].TaskID+`"`, `"state":"TASK_FINISHED"`, `"success":true`)

	out = s.runBlock(dir, blocks[5], "")
	contains(t, "the ejctl block", out, "my_job", "SUCCEEDED", "TASK_FINISHED", "shard 0: task my_job@-@0@-@", "execution(s)", "RUNNING (")

	// What the shards did, at a settled moment (the job disabled): every
	// execution ran every shard once, with its parameter and context.
	s.must(http.MethodPost, "/api/job/my_job/disable", nil)
	ids := strings.Split(s.settled("my_job", func() string { return keysOf(taskOutputs(t, s.dataDir)) }), ",")
	checkShardOutputs(t, s, ids)

	// The docs' commands that act on the walk-through's objects: a task's
	// log as text and as JSON (docs/api.md), the app's package uploaded to
	// the scheduler with curl and with ejctl (docs/jobs.md).
	logs := docBlocks(t, "../docs/api.md", "Task logs")
	if len(logs) != 1 {
		t.Fatalf("docs/api.md Task logs: %d shell blocks, want 1", len(logs))
	}
	out = s.runBlock(dir, logs[0], hist.Rows[0].TaskID)
	contains(t, "docs/api.md task logs", out, `"taskId":"`+hist.Rows[0].TaskID+`"`, `"offset":0`)
	pkg := docBlocks(t, "../docs/jobs.md", "Hosted packages")
	if len(pkg) != 1 {
		t.Fatalf("docs/jobs.md Hosted packages: %d shell blocks, want 1", len(pkg))
	}
	out = s.runBlock(dir, pkg[0], "")
	contains(t, "docs/jobs.md hosted packages", out, `"sha256":"`, "/packages/")
	var app struct{ AppURL string }
	s.getJSON("/api/app/my_app", &app)
	if !strings.Contains(app.AppURL, "/packages/") || !strings.HasSuffix(app.AppURL, "/demo-app.tar.gz") {
		t.Errorf("after the upload, appURL = %q, want the scheduler's package URL", app.AppURL)
	}

	out = s.runBlock(dir, blocks[6], "")
	contains(t, "the clean-up block", out, "deleted app my_app")
	for _, path := range []string{"/api/job/jobs/my_job", "/api/app/my_app"} {
		if code, body := s.do(http.MethodGet, path, nil); code != http.StatusNotFound {
			t.Errorf("after the clean-up, GET %s = %d %s, want 404", path, code, body)
		}
	}
}

// checkShardOutputs reads each task's stdout through the logs API (as
// text and as JSON, which must agree) and checks what the demo app
// printed: its shard, parameter, task id and the sharding context.
func checkShardOutputs(t *testing.T, s *scheduler, ids []string) {
	t.Helper()
	params := map[int]string{0: "Beijing", 1: "Shanghai", 2: "Guangzhou"}
	perShard := map[int]int{}
	for _, id := range ids {
		tid, err := jobs.ParseTaskID(id)
		if err != nil {
			t.Fatalf("task directory %q is not a task id: %v", id, err)
		}
		if tid.JobName != "my_job" || !strings.Contains(id, "@-@READY@-@") {
			t.Errorf("unexpected task %s", id)
		}
		perShard[tid.Item]++

		var chunk struct {
			TaskID, Stream, Data string
		}
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/logs/"+id+"?stream=stdout&tail=4096&format=json", nil), &chunk); err != nil {
			t.Fatal(err)
		}
		full := string(s.must(http.MethodGet, "/api/job/logs/"+id+"?stream=stdout&full=true", nil))
		if chunk.TaskID != id || chunk.Stream != "stdout" || chunk.Data != full {
			t.Errorf("task %s: JSON chunk %+v differs from the text answer %q", id, chunk, full)
		}
		want := fmt.Sprintf("job=my_job shard=%d/3 parameter='%s' task=%s\n", tid.Item, params[tid.Item], id)
		if !strings.HasPrefix(full, want) || strings.Count(full, "job=") != 1 {
			t.Errorf("task %s stdout = %q, want one run printing %q", id, full, want)
			continue
		}
		var ctx struct {
			JobName            string `json:"jobName"`
			TaskID             string `json:"taskId"`
			ShardingTotalCount int    `json:"shardingTotalCount"`
			ShardingItem       int    `json:"shardingItem"`
			ShardingParameter  string `json:"shardingParameter"`
		}
		last := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(full, want), "\n"), "context=")
		if err := json.Unmarshal([]byte(last), &ctx); err != nil {
			t.Errorf("task %s: the JSON last argument %q: %v", id, last, err)
		}
		if ctx.JobName != "my_job" || ctx.TaskID != id || ctx.ShardingTotalCount != 3 || ctx.ShardingItem != tid.Item || ctx.ShardingParameter != params[tid.Item] {
			t.Errorf("task %s: sharding context %+v", id, ctx)
		}
	}
	// Every execution ran every shard exactly once: equal counts per shard
	// at a settled moment (task ids are unique: they are directory names).
	if len(perShard) != 3 || perShard[0] != perShard[1] || perShard[1] != perShard[2] || perShard[0] < 2 {
		t.Errorf("runs per shard = %v, want the same count (≥ 2) for shards 0, 1, 2", perShard)
	}
	// The error JSON of a log that does not exist.
	if code, body := s.do(http.MethodGet, "/api/job/logs/my_job@-@0@-@READY@-@nope@-@x?stream=stdout", nil); code != http.StatusNotFound {
		t.Errorf("log of an unknown task: %d %s, want 404", code, body)
	}
}

// An API-triggered job without a cron runs exactly once per trigger (zip
// app over a file URL).
func TestTriggerRunsOncePerTrigger(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("zip_app", fileURL(recorderZIP), "bin/record.sh", true)
	j := recorderJob("once", "zip_app", out, 2)
	j.ShardingItemParameters = "0=a,1=b"
	s.registerJob(j)
	const n = 5
	for i := 1; i <= n; i++ {
		s.runAndWait("once", out, 2*i)
	}
	// Idle after the last run: nothing pending could add a sixth.
	runs := runsIn(t, out)
	if got := perItem(runs); got[0] != n || got[1] != n || len(got) != 2 {
		t.Errorf("runs per item after %d triggers = %v, want %d each", n, got, n)
	}
	uniqueTaskIDs(t, runs)
	for _, r := range runs {
		want := map[int]string{0: "a", 1: "b"}[r.Item]
		if r.Source != "NORMAL_TRIGGER" || r.Param != want || !strings.Contains(r.TaskID, "@-@READY@-@") {
			t.Errorf("run %+v: want source NORMAL_TRIGGER, parameter %q, a READY task", r, want)
		}
	}
}

// An http appURL with the cache on is downloaded once; later runs
// revalidate (a conditional request answered 304) or do not ask at all.
// With the cache off every run downloads it.
func TestHTTPAppCache(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	data, err := os.ReadFile(fixture(recorderTGZ))
	if err != nil {
		t.Fatal(err)
	}
	for _, cache := range []bool{true, false} {
		name := fmt.Sprintf("cache_%v", cache)
		path := "/" + name + servedPath
		served.put(path, data)
		out := outDir(t)
		s.publishApp(name, appServer.URL+path, "bin/record.sh", cache)
		s.registerJob(recorderJob(name, name, out, 1))
		s.runAndWait(name, out, 1)
		s.runAndWait(name, out, 2)
		st := served.statsOf(path)
		t.Logf("%s: %+v", name, st)
		if cache {
			if st.Full != 1 || st.Requests-st.Full != st.NotModified || st.Conditional != st.NotModified {
				t.Errorf("cache on: requests %+v, want one full download and only conditional requests (304) after it", st)
			}
		} else if st.Full < 2 {
			t.Errorf("cache off: requests %+v, want a full download per run", st)
		}
		uniqueTaskIDs(t, runsIn(t, out))
	}
}
