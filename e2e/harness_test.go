//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Timeouts: generous deadlines for polling real processes on a busy
// 2-core machine; nothing asserts on how long anything took.
const (
	waitLong  = 60 * time.Second
	pollEvery = 50 * time.Millisecond
)

// eventually polls cond until it holds, failing the test with what was
// awaited if it does not within timeout.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	harness.Eventually(t, timeout, pollEvery, cond, what, args...)
}

// poll is eventually without failing: it reports whether cond held in time.
func poll(timeout time.Duration, cond func() bool) bool {
	return harness.Poll(timeout, pollEvery, cond)
}

// late is a message argument evaluated when the message is formatted: the
// state at the deadline.
type late func() any

func (l late) String() string { return fmt.Sprint(l()) }

// scheduler is one scheduler process.
type scheduler struct {
	*harness.Proc
	t       testing.TB
	base    string // http://127.0.0.1:PORT
	dataDir string
	auth    func(*http.Request)
}

type schedOpts struct {
	dataDir string   // default: a fresh t.TempDir()
	dir     string   // working directory of the process (default: inherited)
	extra   []string // more flags
}

// startScheduler starts a scheduler, waits for /healthz and stops it at
// cleanup (SIGTERM, then SIGKILL after harness.StopGrace), then, with the
// embedded agent, stops what it left running (scheduler --recover=cleanup
// on its data directory: executors and tasks outlive a stopped scheduler).
// Its log is printed if the test failed.
func startScheduler(t testing.TB, o schedOpts) *scheduler {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = filepath.Join(t.TempDir(), "data")
	}
	port := harness.FreePort(t)
	args := append([]string{"--data-dir", o.dataDir, "--http-port", strconv.Itoa(port),
		"--embedded-cpus", "2", "--embedded-mem-mb", "4096"}, o.extra...)
	if !slices.Contains(o.extra, "--tenant-isolation") {
		// The tests read what tasks write to the host (out dirs, pids):
		// tenant isolation, which forbids that, is the one test's that
		// asks for it (isolation_tenant_test.go).
		args = append(args, "--tenant-isolation", "off")
	} else if !slices.Contains(o.extra, "--tenant-uid-range") {
		// Each scheduler on a host claims its uid range (docs/tenancy.md):
		// tests running side by side, here and in other test processes,
		// each take one of their own.
		args = append(args, "--tenant-uid-range", uidRange())
	}
	cmd := exec.Command(schedulerBin, args...)
	cmd.Dir = o.dir
	s := &scheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), dataDir: o.dataDir,
		Proc: harness.Start(t, "scheduler", filepath.Join(t.TempDir(), "scheduler.log"), cmd)}
	t.Cleanup(func() {
		s.Stop(t)
		if !slices.Contains(o.extra, "--mesos-url") {
			data := o.dataDir // as the process saw it, from its working directory
			if o.dir != "" && !filepath.IsAbs(data) {
				data = filepath.Join(o.dir, data)
			}
			harness.StopEverything(t, filepath.Join(data, "mesos"), append([]string{schedulerBin, "--data-dir", data}, o.extra...)...)
		}
		if t.Failed() {
			t.Logf("scheduler log (%s):\n%s", s.LogPath, harness.Tail(s.Log(), 200))
		}
	})
	s.AwaitReady(t, waitLong, pollEvery, s.healthy, "scheduler %s to answer /healthz", s.base)
	return s
}

func (s *scheduler) healthy() bool { return harness.Healthy(http.DefaultClient, s.base)() }

// kill9 kills the scheduler with SIGKILL and waits for it. Its executors
// and their tasks outlive it (the next scheduler on its data directory
// takes them over); at cleanup whatever of its children is still alive is
// killed, a safety net against leaks.
func (s *scheduler) kill9() []int {
	children := childrenOf(s.Pid())
	s.Kill9()
	s.t.Cleanup(func() {
		for _, pid := range children {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return children
}

// api is the scheduler's API with the test's credentials.
func (s *scheduler) api() harness.API {
	return harness.API{T: s.t, Base: s.base, Client: http.DefaultClient, Auth: s.auth}
}

// do sends a request; body is raw for string and []byte, else JSON.
func (s *scheduler) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	return s.api().Do(method, path, body)
}

// must sends a request and fails the test unless it answers 2xx.
func (s *scheduler) must(method, path string, body any) []byte {
	s.t.Helper()
	return s.api().Must(method, path, body)
}

func (s *scheduler) getJSON(path string, v any) {
	s.t.Helper()
	if err := json.Unmarshal(s.must(http.MethodGet, path, nil), v); err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
}

// App and job bodies (the API's field names).
type appConfig struct {
	AppName                 string  `json:"appName"`
	AppURL                  string  `json:"appURL"`
	BootstrapScript         string  `json:"bootstrapScript"`
	CPUCount                float64 `json:"cpuCount"`
	MemoryMB                float64 `json:"memoryMB"`
	AppCacheEnable          bool    `json:"appCacheEnable"`
	EventTraceSamplingCount int     `json:"eventTraceSamplingCount"`
}

type jobConfig struct {
	JobName                string            `json:"jobName"`
	AppName                string            `json:"appName"`
	JobExecutionType       string            `json:"jobExecutionType"`
	Cron                   string            `json:"cron,omitempty"`
	ShardingTotalCount     int               `json:"shardingTotalCount"`
	ShardingItemParameters string            `json:"shardingItemParameters,omitempty"`
	JobParameter           string            `json:"jobParameter,omitempty"`
	CPUCount               float64           `json:"cpuCount"`
	MemoryMB               float64           `json:"memoryMB"`
	Failover               bool              `json:"failover"`
	Misfire                bool              `json:"misfire"`
	Props                  map[string]string `json:"props,omitempty"`
	Clusters               []string          `json:"clusters,omitempty"`
}

func (s *scheduler) publishApp(name, url, bootstrap string, cache bool) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/app", appConfig{AppName: name, AppURL: url, BootstrapScript: bootstrap,
		CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: cache})
}

// recorderJob is a TRANSIENT job of the recorder app writing into out.
func recorderJob(name, appName, out string, shards int) jobConfig {
	return jobConfig{JobName: name, AppName: appName, JobExecutionType: "TRANSIENT", ShardingTotalCount: shards,
		JobParameter: out, CPUCount: 0.1, MemoryMB: 32}
}

func (s *scheduler) registerJob(j jobConfig) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/job/register", j)
}

func (s *scheduler) trigger(job string) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/job/trigger", job)
}

type runningTask struct {
	JobName      string `json:"jobName"`
	ShardingItem int    `json:"shardingItem"`
	TaskID       string `json:"taskId"`
	AgentID      string `json:"agentId"`
	State        string `json:"state"`
}

type readyEntry struct {
	JobName string `json:"jobName"`
	Times   int    `json:"times"`
}

type failoverEntry struct {
	JobName      string `json:"jobName"`
	ShardingItem int    `json:"shardingItem"`
	TaskID       string `json:"taskId"`
}

func (s *scheduler) running(job string) []runningTask {
	var all, out []runningTask
	s.getJSON("/api/job/tasks/running", &all)
	for _, r := range all {
		if r.JobName == job {
			out = append(out, r)
		}
	}
	return out
}

func (s *scheduler) ready(job string) int {
	var all []readyEntry
	s.getJSON("/api/job/tasks/ready", &all)
	n := 0
	for _, r := range all {
		if r.JobName == job {
			n += r.Times
		}
	}
	return n
}

func (s *scheduler) failover(job string) []failoverEntry {
	var all, out []failoverEntry
	s.getJSON("/api/job/tasks/failover", &all)
	for _, f := range all {
		if f.JobName == job {
			out = append(out, f)
		}
	}
	return out
}

// idle reports whether the job has nothing running, ready or failing over.
// The queues are read in the order work moves through them (a launch moves
// ready or failover to running in one commit), so work in flight is never
// missed between two reads.
func (s *scheduler) idle(job string) bool {
	return s.ready(job) == 0 && len(s.failover(job)) == 0 && len(s.running(job)) == 0
}

// failedTasks returns the scheduler log's "task failed" lines of a job.
func (s *scheduler) failedTasks(job string) []string {
	var out []string
	for _, line := range strings.Split(s.Log(), "\n") {
		if strings.Contains(line, `msg="task failed"`) && strings.Contains(line, " task="+job+"@-@") {
			out = append(out, line)
		}
	}
	return out
}

// jobRun is one run of a recorder script, as it wrote it.
type jobRun struct {
	Item   int
	TaskID string
	Source string
	Param  string
}

// runsIn reads every OUT/*.log line the recorder scripts wrote.
func runsIn(t testing.TB, out string) []jobRun {
	t.Helper()
	var runs []jobRun
	for _, l := range harness.ReadLines(t, filepath.Join(out, "*.log")) {
		fields := strings.SplitN(l.Text, " ", 4)
		if len(fields) < 3 {
			t.Fatalf("%s: malformed line %q", l.File, l.Text)
		}
		item, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("%s: malformed line %q", l.File, l.Text)
		}
		r := jobRun{Item: item, TaskID: fields[1], Source: fields[2]}
		if len(fields) == 4 {
			r.Param = fields[3]
		}
		runs = append(runs, r)
	}
	return runs
}

func countRuns(t testing.TB, out string) int { return len(runsIn(t, out)) }

// perItem counts runs by sharding item.
func perItem(runs []jobRun) map[int]int {
	m := map[int]int{}
	for _, r := range runs {
		m[r.Item]++
	}
	return m
}

// uniqueTaskIDs fails if a task id appears twice (a task ran twice).
func uniqueTaskIDs(t testing.TB, runs []jobRun) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.TaskID] {
			t.Errorf("task %s ran more than once", r.TaskID)
		}
		seen[r.TaskID] = true
	}
}

// triggerTaken triggers a job until the trigger takes effect (happened).
// A trigger right after the job's registration can be dropped by the
// scheduler (the bug TestTriggerRightAfterRegister shows); the other tests
// re-trigger here so that they test their own subject. A trigger is lost
// when the job is idle again (nothing ready or running) and nothing happened.
func (s *scheduler) triggerTaken(job string, happened func() bool) {
	s.t.Helper()
	s.trigger(job)
	eventually(s.t, waitLong, happened, "job %s to start after a trigger", job)
}

// runAndWait triggers a job and waits until its output holds want runs and
// the job is idle again.
func (s *scheduler) runAndWait(job, out string, want int) []jobRun {
	s.t.Helper()
	before, failed := countRuns(s.t, out), len(s.failedTasks(job))
	s.triggerTaken(job, func() bool { return countRuns(s.t, out) > before || len(s.failedTasks(job)) > failed })
	eventually(s.t, waitLong, func() bool { return countRuns(s.t, out) >= want && s.idle(job) },
		"job %s to have run %d times and be idle (runs at the deadline: %v, running %v, ready %v, failover %v)",
		job, want, late(func() any { return runsIn(s.t, out) }), late(func() any { return s.running(job) }),
		late(func() any { return s.ready(job) }), late(func() any { return s.failover(job) }))
	return runsIn(s.t, out)
}

// triggerToFail triggers a job whose tasks are expected to fail.
func (s *scheduler) triggerToFail(job string) {
	s.t.Helper()
	before := len(s.failedTasks(job))
	s.triggerTaken(job, func() bool { return len(s.failedTasks(job)) > before })
}

// pidOf waits for a sleep.sh pid file and returns the pid.
func pidOf(t testing.TB, pidFile string) int {
	t.Helper()
	var pid int
	eventually(t, waitLong, func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	}, "the pid in %s", pidFile)
	return pid
}

// outDir is a per-test directory the job scripts write into.
func outDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// state is the field after "(comm)"; a zombie has exited.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// childrenOf lists the descendants of pid.
func childrenOf(pid int) []int {
	parent := map[int]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		cur := frontier[0]
		frontier = frontier[1:]
		for p, pp := range parent {
			if pp == cur && !slices.Contains(out, p) {
				out = append(out, p)
				frontier = append(frontier, p)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var uidRanges atomic.Int64

// uidRange is a tenant_uid_range of 1024 uids for one test scheduler, by
// this process's pid and a counter, above the default range.
func uidRange() string {
	slot := int64(os.Getpid()%200)*16 + uidRanges.Add(1)%16
	lo := int64(1879048192) + 65536 + slot*1024
	return fmt.Sprintf("%d-%d", lo, lo+1023)
}
