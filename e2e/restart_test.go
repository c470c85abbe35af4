//go:build e2e

package e2e

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Running work across a restart of the embedded scheduler (issue 31),
// judged from what the job processes themselves wrote.

// gatedShard is a shard that runs until OUT/release<item> exists (at most
// 150 s), writing "pid taskId unixNanos" to OUT/shard<item>.start when it
// starts and to OUT/shard<item>.end when it ends on its own.
const gatedShard = `OUT="$ELASTICJOB_JOB_PARAMETER"; I="$ELASTICJOB_SHARDING_ITEM"; ` +
	`echo "$$ $ELASTICJOB_TASK_ID $(date +%s%N)" >> "$OUT/shard$I.start"; n=0; ` +
	`while [ ! -e "$OUT/release$I" ] && [ $n -lt 3000 ]; do sleep 0.05; n=$((n+1)); done; ` +
	`echo "$$ $ELASTICJOB_TASK_ID $(date +%s%N)" >> "$OUT/shard$I.end" #`

// tick is a DAEMON run every second: "unixNanos taskId" to OUT/daemon.log.
const tick = `echo "$(date +%s%N) $ELASTICJOB_TASK_ID" >> "$ELASTICJOB_JOB_PARAMETER/daemon.log" #`

// gatedNode is wfNodeScript that waits for OUT/release.<job> instead of
// sleeping.
func gatedNode() string {
	return strings.Replace(wfNodeScript("0"), "sleep 0;",
		`n=0; while [ ! -e "$OUT/release.$N" ] && [ $n -lt 3000 ]; do sleep 0.05; n=$((n+1)); done;`, 1)
}

// restartWork registers what runs across the restart: the job "shards"
// (two gated shards), the DAEMON job "ticker" and the workflow "flow"
// (extract → load (gated) → report, and an alert node on oneFailed of
// load), each app with an executor of its own.
func restartWork(s *scheduler, out string) {
	s.t.Helper()
	for _, app := range []string{"shard_app", "daemon_app", "wfapp"} {
		s.must(http.MethodPost, "/api/app", appConfig{AppName: app, BootstrapScript: "none", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true})
	}
	script := func(name, app, kind, cron, line string, shards int) map[string]any {
		return map[string]any{"jobName": name, "appName": app, "jobExecutionType": kind, "cron": cron, "jobType": "SCRIPT",
			"shardingTotalCount": shards, "jobParameter": out, "cpuCount": 0.1, "memoryMB": 16,
			"props": map[string]string{"script.command.line": line}}
	}
	s.must(http.MethodPost, "/api/job/register", script("shards", "shard_app", "TRANSIENT", "", gatedShard, 2))
	s.must(http.MethodPost, "/api/job/register", script("ticker", "daemon_app", "DAEMON", "* * * * * ?", tick, 1))
	for _, j := range []string{"extract", "report", "alert"} {
		s.must(http.MethodPost, "/api/job/register", wfJob(j, 0.1, "0", 0))
	}
	load := wfJob("load", 0.1, "0", 0)
	load["props"] = map[string]string{"script.command.line": gatedNode()}
	s.must(http.MethodPost, "/api/job/register", load)
	s.must(http.MethodPost, "/api/workflow", map[string]any{"name": "flow", "nodes": []map[string]any{
		{"id": "extract", "job": "extract"},
		{"id": "load", "job": "load", "dependsOn": []string{"extract"}},
		{"id": "report", "job": "report", "dependsOn": []string{"load"}},
		{"id": "alert", "job": "alert", "dependsOn": []string{"load"}, "trigger": "oneFailed"},
	}})
}

// mark is a line a gated shard wrote.
type mark struct {
	pid  int
	task string
	at   time.Time
}

// marks reads OUT/shard<item>.<kind> (start or end), one mark per line.
func marks(t testing.TB, out string, item int, kind string) []mark {
	t.Helper()
	var ms []mark
	for _, l := range harness.ReadLines(t, filepath.Join(out, "shard"+strconv.Itoa(item)+"."+kind)) {
		f := strings.Fields(l.Text)
		if len(f) != 3 {
			t.Fatalf("%s: malformed line %q", l.File, l.Text)
		}
		pid, _ := strconv.Atoi(f[0])
		ns, _ := strconv.ParseInt(f[2], 10, 64)
		ms = append(ms, mark{pid: pid, task: f[1], at: time.Unix(0, ns)})
	}
	return ms
}

// ticks reads the daemon's runs: when, and by which task.
func ticks(t testing.TB, out string) []mark {
	t.Helper()
	var ms []mark
	for _, l := range harness.ReadLines(t, filepath.Join(out, "daemon.log")) {
		f := strings.Fields(l.Text)
		if len(f) != 2 {
			t.Fatalf("daemon.log: malformed line %q", l.Text)
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		ms = append(ms, mark{task: f[1], at: time.Unix(0, ns)})
	}
	return ms
}

func ticksAfter(ms []mark, at time.Time) int {
	n := 0
	for _, m := range ms {
		if m.at.After(at) {
			n++
		}
	}
	return n
}

func release(t testing.TB, out, name string) time.Time {
	t.Helper()
	at := time.Now()
	if err := os.WriteFile(filepath.Join(out, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return at
}

// timedExecution is a row of the execution history with its times.
type timedExecution struct {
	TaskID       string     `json:"taskId"`
	Success      bool       `json:"success"`
	FailureCause *string    `json:"failureCause"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
}

// completedExecutions waits until the history holds n completed executions
// of job and returns them by task id.
func (s *scheduler) completedExecutions(job string, n int) map[string]timedExecution {
	s.t.Helper()
	var got map[string]timedExecution
	eventually(s.t, waitLong, func() bool {
		var page struct {
			Rows []timedExecution `json:"rows"`
		}
		s.getJSON("/api/job/events/executions?per_page=100&jobName="+url.QueryEscape(job), &page)
		got = map[string]timedExecution{}
		for _, r := range page.Rows {
			if r.CompleteTime != nil {
				got[r.TaskID] = r
			}
		}
		return len(page.Rows) == n && len(got) == n
	}, "%d completed executions of %s in the history (got %v)", n, job, late(func() any { return got }))
	return got
}

// statusMessages are the messages of the job's status traces.
func (s *scheduler) statusMessages(job string) []string {
	var page struct {
		Rows []struct {
			Message string `json:"message"`
		} `json:"rows"`
	}
	s.getJSON("/api/job/events/statusTraces?per_page=100&jobName="+url.QueryEscape(job), &page)
	var out []string
	for _, r := range page.Rows {
		out = append(out, r.Message)
	}
	return out
}

// Stopping the scheduler with SIGTERM while two shards, a DAEMON job and a
// workflow run, and starting it again on the same data directory, costs
// nothing that runs.
func TestRestartKeepsRunningWork(t *testing.T) {
	testRestartKeepsRunningWork(t, func(s *scheduler) time.Time { s.Stop(t); return s.DiedAt() })
}

// The same with kill -9 of the scheduler.
func TestKill9KeepsRunningWork(t *testing.T) {
	testRestartKeepsRunningWork(t, func(s *scheduler) time.Time { return s.Kill9() })
}

// testRestartKeepsRunningWork: every shard process started once and ended
// on its own (one shard while the scheduler was down, the other after the
// restart); the history has each as a success with its real times (not the
// restart's) and no reconciliation loss; the workflow run goes on and
// succeeds, its alert node never fires; the daemon's executor ran its cron
// all along with the same task.
func testRestartKeepsRunningWork(t *testing.T, stop func(*scheduler) time.Time) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	opts := schedOpts{dataDir: dataDir, extra: []string{"--recovery-timeout", "2m"}}
	s1 := startScheduler(t, opts)
	out := outDir(t)
	restartWork(s1, out)
	triggered := time.Now()
	s1.trigger("shards")
	run := s1.wfTrigger("flow", out)
	eventually(t, waitLong, func() bool {
		return len(marks(t, out, 0, "start")) == 1 && len(marks(t, out, 1, "start")) == 1 && len(s1.running("shards")) == 2 &&
			len(s1.runningRows("ticker")) == 1 && len(ticks(t, out)) >= 2 && wfNodeState(s1.wfRun("flow", run), "load") == "RUNNING"
	}, "both shards, the daemon and the workflow's load node to run (shards running %v, run %v)",
		late(func() any { return s1.running("shards") }), late(func() any { return s1.wfRun("flow", run) }))
	daemonTask := s1.runningRows("ticker")[0].TaskID
	started := map[int]mark{0: marks(t, out, 0, "start")[0], 1: marks(t, out, 1, "start")[0]}
	outsideOf(t, s1, filepath.Join(dataDir, "mesos"))

	stopped := stop(s1)
	for item, m := range started {
		if !alive(m.pid) {
			t.Fatalf("shard %d (pid %d) died with the scheduler", item, m.pid)
		}
	}
	eventually(t, waitLong, func() bool { return ticksAfter(ticks(t, out), stopped) >= 2 },
		"the daemon's cron to go on while the scheduler is down")
	released1 := release(t, out, "release1")
	eventually(t, waitLong, func() bool {
		return len(marks(t, out, 1, "end")) == 1 && executorLogged(dataDir, "status update not delivered", "task="+started[1].task, "state=TASK_FINISHED")
	}, "shard 1 to end while the scheduler is down, and its executor to fail to report it")
	restarted := time.Now()
	s2 := startScheduler(t, opts)
	eventually(t, waitLong, func() bool { rt := s2.running("shards"); return len(rt) == 1 && rt[0].TaskID == started[0].task },
		"the restarted scheduler to hold shard 0 (%s) running and shard 1 done (running: %v)", started[0].task,
		late(func() any { return s2.running("shards") }))
	released0 := release(t, out, "release0")
	release(t, out, "release.load")
	eventually(t, waitLong, func() bool { return s2.idle("shards") }, "shard 0 to end")
	eventually(t, 2*waitLong, func() bool { st := s2.wfRun("flow", run).State; return st != "RUNNING" && st != "QUEUED" },
		"the workflow run to end (run: %v)", late(func() any { return s2.wfRun("flow", run) }))
	eventually(t, waitLong, func() bool { return ticksAfter(ticks(t, out), restarted) >= 2 }, "the daemon's cron to go on after the restart")

	// The processes: each shard started once and ended on its own.
	for item, s := range started {
		ends := marks(t, out, item, "end")
		if n := len(marks(t, out, item, "start")); n != 1 || len(ends) != 1 || ends[0].pid != s.pid || ends[0].task != s.task {
			t.Errorf("shard %d: %d starts, ends %+v; want one start and one end by process %d of %s", item, n, ends, s.pid, s.task)
		}
	}
	// The history: each a success, with its real times.
	execs := s2.completedExecutions("shards", 2)
	ended1 := marks(t, out, 1, "end")[0].at
	for item, s := range started {
		e, ok := execs[s.task]
		switch {
		case !ok:
			t.Errorf("shard %d: no execution of %s in %v", item, s.task, execs)
		case !e.Success:
			t.Errorf("shard %d: execution failed: %v", item, *e.FailureCause)
		case e.StartTime.Before(triggered.Truncate(time.Millisecond)) || !e.StartTime.Before(stopped):
			t.Errorf("shard %d: recorded start %v, want when its process started (it wrote %v), after the trigger (%v) and before the stop (%v)",
				item, e.StartTime, s.at, triggered, stopped)
		case e.CompleteTime.Before(marks(t, out, item, "end")[0].at.Truncate(time.Millisecond)):
			t.Errorf("shard %d: recorded end %v before its process ended (%v)", item, e.CompleteTime, marks(t, out, item, "end")[0].at)
		}
	}
	if e := execs[started[1].task]; e.CompleteTime != nil && (!e.CompleteTime.Before(restarted) || e.CompleteTime.Before(released1)) {
		t.Errorf("shard 1 recorded ending at %v, want its real end (%v, while the scheduler was down: %v..%v)", e.CompleteTime, ended1, released1, restarted)
	}
	if e := execs[started[0].task]; e.CompleteTime != nil && e.CompleteTime.Before(released0) {
		t.Errorf("shard 0 recorded ending at %v, before it was released (%v)", e.CompleteTime, released0)
	}
	for _, m := range s2.statusMessages("shards") {
		if strings.Contains(m, "unknown") || strings.Contains(m, "gone") {
			t.Errorf("status trace of a surviving shard: %q", m)
		}
	}
	if failed := append(s2.failedTasks("shards"), s2.failedTasks("ticker")...); len(failed) > 0 {
		t.Errorf("tasks failed across the restart: %v", failed)
	}
	// The workflow: succeeded, every node once, the alert never.
	v := s2.wfRun("flow", run)
	if v.State != "SUCCEEDED" || wfNodeState(v, "alert") != "SKIPPED" {
		t.Errorf("run %s (%s), nodes %v: want SUCCEEDED with the alert skipped", v.State, v.Reason, nodeStates(v))
	}
	for _, n := range []string{"extract", "load", "report"} {
		if starts := strings.Count(readOr(filepath.Join(out, n+".log")), "start "); starts != 1 {
			t.Errorf("node %s started %d times, want once", n, starts)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "alert.log")); err == nil {
		t.Error("the alert node ran")
	}
	// The daemon: one task all along, its cron ticking while the scheduler was down.
	if rows := s2.runningRows("ticker"); len(rows) != 1 || rows[0].TaskID != daemonTask {
		t.Errorf("daemon running %+v after the restart, want its task %s", rows, daemonTask)
	}
	for _, m := range ticks(t, out) {
		if m.task != daemonTask {
			t.Errorf("a daemon run by task %s, want every run by %s", m.task, daemonTask)
			break
		}
	}
}

// executorLogged reports whether an executor of the embedded agent in
// dataDir logged a line holding every one of parts.
func executorLogged(dataDir string, parts ...string) bool {
	logs, _ := filepath.Glob(filepath.Join(dataDir, "mesos", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "stderr"))
	for _, f := range logs {
		for _, line := range strings.Split(readOr(f), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
	}
	return false
}

// outsideOf fails unless every executor and task process in the sandboxes
// is in a process group and session other than the scheduler's (a signal
// to its group or terminal must not reach them).
func outsideOf(t *testing.T, s *scheduler, sandboxes string) {
	t.Helper()
	pgrp, sid, ok := harness.GroupAndSession(s.Pid())
	if !ok {
		t.Fatalf("the scheduler (%d) is gone", s.Pid())
	}
	procs := harness.SandboxProcs(sandboxes)
	if len(procs) < 5 { // three executors, two shards
		t.Fatalf("%d processes in the sandboxes, want the executors and the shards", len(procs))
	}
	checked := 0
	for _, p := range procs {
		g, ss, ok := harness.GroupAndSession(p)
		if !ok {
			continue // a short-lived child of a task (a shell loop's sleep) that ended since the listing
		}
		checked++
		if g == pgrp || ss == sid {
			t.Errorf("process %d is in the scheduler's process group %d or session %d (its: %d, %d)", p, pgrp, sid, g, ss)
		}
	}
	if checked < 5 {
		t.Errorf("%d of %d processes in the sandboxes still there to check, want the executors and the shards", checked, len(procs))
	}
}

func wfNodeState(v wfRunView, id string) string {
	for _, n := range v.Nodes {
		if n.ID == id {
			return n.State
		}
	}
	return ""
}

func readOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// startShards starts a scheduler on dataDir with restartWork and returns
// once both shards and the daemon run.
func startShards(t *testing.T, dataDir string) (*scheduler, string) {
	t.Helper()
	s := startScheduler(t, schedOpts{dataDir: dataDir})
	out := outDir(t)
	restartWork(s, out)
	s.trigger("shards")
	eventually(t, waitLong, func() bool {
		rt := s.running("shards")
		return len(marks(t, out, 0, "start")) == 1 && len(marks(t, out, 1, "start")) == 1 && len(rt) == 2 &&
			rt[0].State == "TASK_RUNNING" && rt[1].State == "TASK_RUNNING" && len(s.runningRows("ticker")) == 1
	}, "both shards (reported running) and the daemon to run (running: %v)", late(func() any { return s.running("shards") }))
	return s, out
}

// Stopping everything on purpose: SIGTERM, then scheduler --recover=cleanup
// on the same data directory, which ends every executor and task the run
// left and exits; the next start records the shards as ended by it (not
// succeeded, dated when they were stopped) and runs the DAEMON job afresh.
func TestRecoverCleanupStopsEverything(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1, out := startShards(t, dataDir)
	daemonTask := s1.runningRows("ticker")[0].TaskID
	s1.Stop(t)
	sandboxes := filepath.Join(dataDir, "mesos")
	if n := len(harness.SandboxProcs(sandboxes)); n < 4 { // two executors, two shards
		t.Fatalf("%d processes left running by the stopped scheduler, want its executors and shards", n)
	}

	cleanupStarted := time.Now()
	cmd := exec.Command(schedulerBin, "--data-dir", dataDir, "--recover=cleanup")
	outb, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(outb), "recover=cleanup: shut down 2 executors") {
		t.Fatalf("scheduler --recover=cleanup: %v\n%s", err, harness.Tail(string(outb), 40))
	}
	if left := harness.SandboxProcs(sandboxes); len(left) > 0 {
		t.Fatalf("processes %v still run after the cleanup", left)
	}
	for item := range 2 {
		if ends := marks(t, out, item, "end"); len(ends) > 0 {
			t.Errorf("shard %d ended on its own (%+v); the cleanup was to kill it", item, ends)
		}
	}
	cleaned := time.Now()

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	for task, e := range s2.completedExecutions("shards", 2) {
		if e.Success || e.FailureCause == nil || *e.FailureCause == "" || e.CompleteTime.Before(cleanupStarted.Truncate(time.Millisecond)) ||
			e.CompleteTime.After(cleaned) {
			t.Errorf("execution %s: success %v cause %v at %v, want a failure dated by the cleanup (%v..%v)",
				task, e.Success, e.FailureCause, e.CompleteTime, cleanupStarted, cleaned)
		}
	}
	eventually(t, waitLong, func() bool { rows := s2.runningRows("ticker"); return len(rows) == 1 && rows[0].TaskID != daemonTask },
		"the daemon job to run afresh after the cleanup")
	if !s2.idle("shards") {
		t.Errorf("shards not idle after the cleanup: running %v", s2.running("shards"))
	}
}

// kill -9 of the scheduler and of its executors and tasks too (as an OOM
// kill or a lost machine would): the restarted scheduler ends the tasks with
// their real end (when they were last seen, before the restart) and a cause
// that says so, not "Reconciliation: Task is unknown".
func TestRestartAfterExecutorsDied(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1, out := startShards(t, dataDir)
	s1.Kill9()
	sandboxes := filepath.Join(dataDir, "mesos")
	harness.KillSandboxProcs(sandboxes)
	eventually(t, waitLong, func() bool { return len(harness.SandboxProcs(sandboxes)) == 0 }, "the executors and tasks to die")
	killed := time.Now()

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	eventually(t, waitLong, func() bool { return s2.idle("shards") }, "the lost shards to leave the running list")
	for item := range 2 {
		start := marks(t, out, item, "start")[0]
		e, ok := s2.completedExecutions("shards", 2)[start.task]
		switch {
		case !ok:
			t.Errorf("shard %d: no execution of %s", item, start.task)
		case e.Success || e.FailureCause == nil || *e.FailureCause != "the executor was gone when the scheduler restarted":
			t.Errorf("shard %d: success %v, cause %v", item, e.Success, e.FailureCause)
		case e.StartTime == nil || e.CompleteTime.After(killed) || e.CompleteTime.Before(*e.StartTime):
			t.Errorf("shard %d: recorded from %v to %v, want an end when it was last seen alive (after its start, before %v)",
				item, e.StartTime, e.CompleteTime, killed)
		}
	}
	for _, m := range s2.statusMessages("shards") {
		if strings.Contains(m, "Task is unknown") {
			t.Errorf("status trace %q", m)
		}
	}
}
