//go:build e2e

package realmesos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Generous deadlines for polling real processes on a busy 2-core machine; nothing asserts on
// how long anything took.
const (
	waitLong  = 90 * time.Second
	pollEvery = 100 * time.Millisecond
)

var httpClient = &http.Client{Timeout: 10 * time.Second}

// eventually polls cond until it holds, failing the test with what was awaited if it does not
// within timeout.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	harness.Eventually(t, timeout, pollEvery, cond, what, args...)
}

// proc is one process a test started (a Mesos master or agent, a scheduler); its output goes to
// a log file.
type proc struct {
	*harness.Proc
	t    testing.TB
	port int
}

// startProc starts bin with args, logging to dir/name.log; it is stopped at cleanup.
func startProc(t testing.TB, name, bin, dir string, args []string) *proc {
	t.Helper()
	p := &proc{Proc: harness.Start(t, name, filepath.Join(dir, name+".log"), exec.Command(bin, args...)), t: t}
	t.Cleanup(p.stop)
	return p
}

func (p *proc) exited() bool { return !p.Running() }

// stop ends the process with SIGTERM, SIGKILL after harness.StopGrace. Idempotent.
func (p *proc) stop() { p.Stop(p.t) }

// kill9 kills the process with SIGKILL and waits for it. Idempotent.
func (p *proc) kill9() { p.Kill9() }

// pause and resume stop and continue the process (SIGSTOP, SIGCONT).
func (p *proc) pause()  { _ = p.Signal(syscall.SIGSTOP) }
func (p *proc) resume() { _ = p.Signal(syscall.SIGCONT) }

// scheduler is one scheduler process on the real Mesos cluster.
type scheduler struct {
	*proc
	base    string // http://127.0.0.1:PORT
	dataDir string
}

// schedOpts shape the schedulers of startSchedulers.
type schedOpts struct {
	mesosURL string   // mesos_url (required): the master's http URL or a zk:// URL
	name     string   // mesos_framework_name (default: elasticjob-cloud)
	extra    []string // more flags, e.g. "--mesos-principal", "ej", "--zk-servers", zk
	// noWait skips waiting for the subscription (for schedulers the master is expected to refuse).
	noWait bool
}

// startSchedulers starts n schedulers against the same Mesos, each with its own data directory
// and port, waits for each to answer /healthz and (unless noWait) for the first to subscribe,
// and stops them at cleanup (their logs are printed when the test failed).
func startSchedulers(t *testing.T, n int, o schedOpts) []*scheduler {
	t.Helper()
	out := make([]*scheduler, n)
	for i := range n {
		out[i] = startScheduler(t, fmt.Sprintf("scheduler%d", i), filepath.Join(t.TempDir(), "data"), o)
	}
	if !o.noWait {
		eventually(t, waitLong, func() bool {
			for _, s := range out {
				if s.subscribed() {
					return true
				}
			}
			return false
		}, "a scheduler to subscribe")
	}
	return out
}

// startScheduler starts one scheduler with dataDir (reuse one to restart a scheduler).
func startScheduler(t *testing.T, name, dataDir string, o schedOpts) *scheduler {
	t.Helper()
	port := harness.FreePort(t)
	args := append([]string{"--data-dir", dataDir, "--http-port", strconv.Itoa(port), "--mesos-url", o.mesosURL,
		"--offer-refuse-seconds", "1s"}, o.extra...)
	if o.name != "" {
		args = append(args, "--mesos-framework-name", o.name)
	}
	s := &scheduler{proc: startProc(t, name, schedulerBin, t.TempDir(), args),
		base: "http://127.0.0.1:" + strconv.Itoa(port), dataDir: dataDir}
	s.port = port
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (%s):\n%s", name, s.LogPath, harness.Tail(s.Log(), 120))
		}
	})
	s.AwaitReady(t, waitLong, pollEvery, harness.Healthy(httpClient, s.base), "%s to answer /healthz", name)
	return s
}

// api is the scheduler's API.
func (s *scheduler) api() harness.API { return harness.API{T: s.t, Base: s.base, Client: httpClient} }

// do sends a JSON request (a string body is sent raw) and returns the status and body.
func (s *scheduler) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	return s.api().Do(method, path, body)
}

// must sends a request and fails the test unless it answers 2xx.
func (s *scheduler) must(method, path string, body any) []byte {
	s.t.Helper()
	return s.api().Must(method, path, body)
}

// publishApp publishes an app at url whose bootstrap script is bootstrap.
func (s *scheduler) publishApp(name, url, bootstrap string) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": name, "appURL": url, "bootstrapScript": bootstrap,
		"cpuCount": 0.1, "memoryMB": 64, "appCacheEnable": true})
}

// registerJob registers a TRANSIENT job of the recorder app writing into out (cron "" = none).
func (s *scheduler) registerJob(name, app, cron, out string, shards int) {
	s.t.Helper()
	j := map[string]any{"jobName": name, "appName": app, "jobExecutionType": "TRANSIENT", "shardingTotalCount": shards,
		"jobParameter": out, "cpuCount": 0.1, "memoryMB": 32}
	if cron != "" {
		j["cron"] = cron
	}
	s.must(http.MethodPost, "/api/job/register", j)
}

func (s *scheduler) trigger(job string) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/job/trigger", job)
}

// taskAgent is the agent a task ran (or runs) on, as the scheduler's task
// view names it (a fire's task id names none: jobs.FireTaskID).
func (s *scheduler) taskAgent(task string) string {
	s.t.Helper()
	var v struct {
		AgentID string `json:"agentId"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/"+url.PathEscape(task), nil), &v); err != nil {
		s.t.Fatal(err)
	}
	return v.AgentID
}

// execution is one row of the execution history.
type execution struct {
	TaskID       string `json:"taskId"`
	ShardingItem int    `json:"shardingItem"`
	Success      bool   `json:"success"`
	CompleteTime string `json:"completeTime"`
}

// executions reads the job's execution history.
func (s *scheduler) executions(job string) []execution {
	s.t.Helper()
	var page struct {
		Rows []execution `json:"rows"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?per_page=500&jobName="+job, nil), &page); err != nil {
		s.t.Fatal(err)
	}
	return page.Rows
}

// subscribed reports whether the scheduler logged a subscription.
func (s *scheduler) subscribed() bool { return strings.Contains(s.Log(), "msg=subscribed") }

func itoa(n int) string { return strconv.Itoa(n) }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

func fmtMap(m map[int]int) string { return fmt.Sprint(m) }

// sharedRegistry returns the flags that put schedulers on one ZooKeeper registry (a fresh
// namespace on EJ_TEST_ZK), so that they share the framework, as the instances of a cluster do:
// startSchedulers(t, 2, schedOpts{mesosURL: m.masterURL(), extra: sharedRegistry(t)}).
func sharedRegistry(t *testing.T) []string {
	t.Helper()
	zk := requireZK(t)
	return []string{"--zk-servers", zk, "--zk-namespace", fmt.Sprintf("ej-realmesos-%d", time.Now().UnixNano())}
}

// subscribedOf returns the schedulers whose log shows a live subscription to the master (with
// leader election: exactly one, the leader).
func subscribedOf(ss []*scheduler) []*scheduler {
	var out []*scheduler
	for _, s := range ss {
		if s.subscribed() {
			out = append(out, s)
		}
	}
	return out
}
