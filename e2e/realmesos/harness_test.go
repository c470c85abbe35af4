package realmesos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Generous deadlines for polling real processes on a busy 2-core machine; nothing asserts on
// how long anything took.
const (
	waitLong  = 90 * time.Second
	pollEvery = 100 * time.Millisecond
	stopGrace = 20 * time.Second
)

var httpClient = &http.Client{Timeout: 10 * time.Second}

// eventually polls cond until it holds, failing the test with what was awaited if it does not
// within timeout.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", timeout, fmt.Sprintf(what, args...))
		}
		time.Sleep(pollEvery)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// proc is one process a test started (a Mesos master or agent, a scheduler); its output goes to
// a log file.
type proc struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	logPath string
	port    int
	done    chan struct{} // closed when the process has been waited for
}

// startProc starts bin with args, logging to dir/name.log; it is stopped at cleanup.
func startProc(t testing.TB, name, bin, dir string, args []string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process with SIGTERM, SIGKILL after stopGrace. Idempotent.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.t.Errorf("%s did not stop within %v of SIGTERM; killing it", p.name, stopGrace)
		p.kill9()
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *proc) kill9() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// pause and resume stop and continue the process (SIGSTOP, SIGCONT).
func (p *proc) pause()  { _ = p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *proc) resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

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
				if strings.Contains(s.log(), "msg=subscribed") {
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
	port := freePort(t)
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
			t.Logf("%s log (%s):\n%s", name, s.logPath, tail(s.log(), 120))
		}
	})
	eventually(t, waitLong, func() bool {
		if s.exited() {
			t.Fatalf("%s exited during start-up: %v\n%s", name, s.cmd.ProcessState, s.log())
		}
		resp, err := httpClient.Get(s.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "%s to answer /healthz", name)
	return s
}

// do sends a JSON request (a string body is sent raw) and returns the status and body.
func (s *scheduler) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// must sends a request and fails the test unless it answers 2xx.
func (s *scheduler) must(method, path string, body any) []byte {
	s.t.Helper()
	code, out := s.do(method, path, body)
	if code/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, code, out)
	}
	return out
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
func (s *scheduler) subscribed() bool { return strings.Contains(s.log(), "msg=subscribed") }

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
