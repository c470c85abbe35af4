package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
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

// The README walk-through, with its curl bodies as written: publish the demo
// app (file URL), register a 3-shard transient job firing every 5 s,
// trigger it, read the output through the logs API.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.must(http.MethodPost, "/api/app", `{"appName":"my_app","appURL":"`+fileURL(demoApp)+`","cpuCount":0.1,"memoryMB":64.0,"bootstrapScript":"bin/start.sh","appCacheEnable":true,"eventTraceSamplingCount":0}`)
	s.must(http.MethodPost, "/api/job/register", `{"jobName":"my_job","appName":"my_app","jobExecutionType":"TRANSIENT","cron":"0/5 * * * * * ?","shardingTotalCount":3,"shardingItemParameters":"0=Beijing,1=Shanghai,2=Guangzhou","cpuCount":0.1,"memoryMB":64.0}`)
	s.must(http.MethodPost, "/api/job/trigger", `my_job`)

	// The trigger and at least one cron fire: two executions, six tasks.
	eventually(t, waitLong, func() bool { return len(taskOutputs(t, s.dataDir)) >= 6 },
		"two executions of my_job (tasks seen at the deadline: %v)", late(func() any { return keysOf(taskOutputs(t, s.dataDir)) }))
	ids := strings.Split(s.settled("my_job", func() string { return keysOf(taskOutputs(t, s.dataDir)) }), ",")
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

		// tail (JSON chunk) and full=true (text/plain) through the API.
		var chunk struct {
			TaskID, Stream, Data string
		}
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/logs/"+id+"?stream=stdout&tail=4096", nil), &chunk); err != nil {
			t.Fatal(err)
		}
		full := string(s.must(http.MethodGet, "/api/job/logs/"+id+"?stream=stdout&full=true", nil))
		if chunk.TaskID != id || chunk.Stream != "stdout" || chunk.Data != full {
			t.Errorf("task %s: tail chunk %+v differs from full log %q", id, chunk, full)
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
	s.must(http.MethodPost, "/api/job/my_job/disable", nil)
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
