//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testbin"
)

// goAppURL is examples/go-app (the Go SDK example) packed as make build packs it, as a
// file:// URL.
var goAppURL = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "elasticjob-e2e-go-app-")
	if err != nil {
		return "", err
	}
	tgz, err := testbin.GoApp("..", dir)
	if err != nil {
		return "", err
	}
	return "file://" + tgz, nil
})

// daemonRunning is a row of GET /api/job/tasks/running with the daemon's
// busy flag.
type daemonRunning struct {
	JobName string `json:"jobName"`
	TaskID  string `json:"taskId"`
	Busy    bool   `json:"busy"`
}

func (s *scheduler) runningRows(job string) []daemonRunning {
	var all, out []daemonRunning
	s.getJSON("/api/job/tasks/running", &all)
	for _, r := range all {
		if r.JobName == job {
			out = append(out, r)
		}
	}
	return out
}

func (s *scheduler) taskStdout(taskID string) string {
	code, out := s.do(http.MethodGet, "/api/job/logs/"+url.PathEscape(taskID)+"?stream=stdout&full=true", nil)
	if code != http.StatusOK {
		return ""
	}
	return string(out)
}

type execution struct {
	TaskID       string  `json:"taskId"`
	Success      bool    `json:"success"`
	FailureCause *string `json:"failureCause"`
}

func (s *scheduler) executions(job string) []execution {
	var page struct {
		Rows []execution `json:"rows"`
	}
	s.getJSON("/api/job/events/executions?per_page=100&jobName="+url.QueryEscape(job), &page)
	return page.Rows
}

var goAppRun = regexp.MustCompile(`go-app pid=(\d+) run=(\d+) `)

// TestDaemonGoAppStaysResident: a DAEMON job of the Go SDK example with
// sdk.protocol=line runs every second in one resident process (its
// in-memory run counter grows), its runs are recorded as executions, and
// disabling the job stops the task and its process.
func TestDaemonGoAppStaysResident(t *testing.T) {
	appURL, err := goAppURL()
	if err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, schedOpts{})
	s.publishApp("go_app", appURL, "bin/go-app", true)
	s.must(http.MethodPost, "/api/job/register", map[string]any{
		"jobName": "go_daemon", "appName": "go_app", "jobExecutionType": "DAEMON", "cron": "*/1 * * * * ?",
		"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 32, "props": map[string]string{"sdk.protocol": "line"},
	})
	var task string
	eventually(t, waitLong, func() bool {
		rows := s.runningRows("go_daemon")
		if len(rows) == 1 {
			task = rows[0].TaskID
		}
		return task != ""
	}, "the daemon task to run")
	var pids map[string]bool
	var counts []int
	eventually(t, waitLong, func() bool {
		pids, counts = map[string]bool{}, nil
		for _, m := range goAppRun.FindAllStringSubmatch(s.taskStdout(task), -1) {
			pids[m[1]] = true
			n, _ := strconv.Atoi(m[2])
			counts = append(counts, n)
		}
		return len(counts) >= 3
	}, "three runs in the task's stdout (got %v)", late(func() any { return counts }))
	if len(pids) != 1 {
		t.Fatalf("runs in %d processes %v, want one resident process", len(pids), pids)
	}
	for i, n := range counts {
		if n != i+1 {
			t.Fatalf("run counts %v: the process was not resident", counts)
		}
	}
	var pid int
	for p := range pids {
		pid, _ = strconv.Atoi(p)
	}
	if !alive(pid) {
		t.Fatalf("resident process %d is gone while the task runs", pid)
	}
	eventually(t, waitLong, func() bool {
		n := 0
		for _, e := range s.executions("go_daemon") {
			if e.TaskID == task && e.Success {
				n++
			}
		}
		return n >= 2
	}, "daemon runs recorded in /api/job/events/executions")
	s.must(http.MethodPost, "/api/job/go_daemon/disable", nil)
	eventually(t, waitLong, func() bool { return len(s.runningRows("go_daemon")) == 0 && !alive(pid) },
		"the disabled daemon's task and process %d to end", pid)
}

// TestDaemonScriptForksPerFire: a DAEMON job without the protocol runs a
// fresh process per fire and shows busy while a run is in progress.
func TestDaemonScriptForksPerFire(t *testing.T) {
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("recorder", fileURL(recorderTGZ), "bin/record.sh", true)
	s.must(http.MethodPost, "/api/job/register", map[string]any{
		"jobName": "script_daemon", "appName": "recorder", "jobExecutionType": "DAEMON", "cron": "*/1 * * * * ?",
		"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 32, "jobType": "SCRIPT",
		"props": map[string]string{"script.command.line": `echo "pid $$"; touch "` + out + `/busy"; sleep 0.6; rm -f "` + out + `/busy"; echo >> "` + out + `/runs"`},
	})
	sawBusy := false
	eventually(t, waitLong, func() bool {
		for _, r := range s.runningRows("script_daemon") {
			sawBusy = sawBusy || r.Busy
		}
		b, _ := os.ReadFile(filepath.Join(out, "runs"))
		return sawBusy && strings.Count(string(b), "\n") >= 3
	}, "three runs of the daemon and a busy task (busy seen: %v)", late(func() any { return sawBusy }))
	rows := s.runningRows("script_daemon")
	if len(rows) != 1 {
		t.Fatalf("running %v", rows)
	}
	pids := map[string]bool{}
	for _, l := range strings.Split(s.taskStdout(rows[0].TaskID), "\n") {
		if strings.HasPrefix(l, "pid ") {
			pids[l] = true
		}
	}
	if len(pids) < 3 {
		t.Fatalf("pids %v: want a process per fire", pids)
	}
	s.must(http.MethodDelete, "/api/job/script_daemon/deregister", nil)
	eventually(t, waitLong, func() bool { return len(s.runningRows("script_daemon")) == 0 }, "the deregistered daemon to stop")
}

// TestHTTPJob: an HTTP job calls the URL once per shard with the sharding
// context in the shardingContext header and fetches no app.
func TestHTTPJob(t *testing.T) {
	type call struct{ method, ctx, body string }
	calls := make(chan call, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		calls <- call{r.Method, r.Header.Get("shardingContext"), string(b[:n])}
		w.Write([]byte("hello from the endpoint\n"))
	}))
	defer srv.Close()
	s := startScheduler(t, schedOpts{})
	s.publishApp("http_app", unreachableURL, "bin/none.sh", true)
	s.must(http.MethodPost, "/api/job/register", map[string]any{
		"jobName": "http_job", "appName": "http_app", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 2,
		"shardingItemParameters": "0=a,1=b", "cpuCount": 0.1, "memoryMB": 32, "jobType": "HTTP",
		"props": map[string]string{"http.url": srv.URL + "/run", "http.method": "POST", "http.data": "x=1"},
	})
	s.triggerTaken("http_job", func() bool { return len(calls) > 0 })
	items := map[int]string{}
	deadline := time.After(waitLong)
	for len(items) < 2 {
		select {
		case c := <-calls:
			var sc struct {
				JobName           string `json:"jobName"`
				ShardingItem      int    `json:"shardingItem"`
				ShardingParameter string `json:"shardingParameter"`
			}
			if err := json.Unmarshal([]byte(c.ctx), &sc); err != nil || sc.JobName != "http_job" || c.method != "POST" || c.body != "x=1" {
				t.Fatalf("call %+v: %v", c, err)
			}
			items[sc.ShardingItem] = sc.ShardingParameter
		case <-deadline:
			t.Fatalf("calls for shards %v only", items)
		}
	}
	if items[0] != "a" || items[1] != "b" {
		t.Fatalf("shards %v", items)
	}
	eventually(t, waitLong, func() bool { return s.idle("http_job") }, "the HTTP job to finish")
	if f := s.failedTasks("http_job"); len(f) != 0 {
		t.Fatalf("failed: %v", f)
	}
}

// TestTimeoutSeconds: a run longer than timeoutSeconds is killed and fails
// with "timed out".
func TestTimeoutSeconds(t *testing.T) {
	s := startScheduler(t, schedOpts{})
	s.publishApp("recorder", fileURL(recorderTGZ), "bin/record.sh", true)
	s.must(http.MethodPost, "/api/job/register", map[string]any{
		"jobName": "slow_job", "appName": "recorder", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 1,
		"cpuCount": 0.1, "memoryMB": 32, "jobType": "SCRIPT", "timeoutSeconds": 1,
		"props": map[string]string{"script.command.line": "sleep 3600; true"}, // the JSON argument goes to true
	})
	s.triggerToFail("slow_job") // an uncut run would outlast its deadline
	if f := s.failedTasks("slow_job"); !strings.Contains(f[0], "timed out after 1s") {
		t.Fatalf("failure %q", f[0])
	}
}
