//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// Workflows end to end: real scheduler processes, real executors, jobs
// that write what they did into a directory (the run's parameter).

// wfNodeScript records a node's start and end in OUT/JOB.log (OUT is the
// run's parameter, every node's jobParameter), how many inputs it got in
// OUT/JOB.inputs, and writes an output. It sleeps in between.
func wfNodeScript(sleep string) string {
	return `OUT="$ELASTICJOB_JOB_PARAMETER"; N="$ELASTICJOB_JOB_NAME"; ` +
		`echo "start $ELASTICJOB_TASK_ID $ELASTICJOB_EXECUTION_SOURCE" >> "$OUT/$N.log"; sleep ` + sleep + `; ` +
		`env | grep -c '^ELASTICJOB_INPUT_' > "$OUT/$N.inputs"; echo "rows=$N" > "$ELASTICJOB_OUTPUT"; ` +
		`echo "done $ELASTICJOB_TASK_ID" >> "$OUT/$N.log" #`
}

// wfJob is a SCRIPT job of app wfapp running wfNodeScript.
func wfJob(name string, cpu float64, sleep string, retries int) map[string]any {
	return map[string]any{"jobName": name, "appName": "wfapp", "jobExecutionType": "TRANSIENT", "jobType": "SCRIPT",
		"shardingTotalCount": 1, "cpuCount": cpu, "memoryMB": 16, "maxRetries": retries, "retryBackoffSeconds": 0,
		"props": map[string]string{"script.command.line": wfNodeScript(sleep)}}
}

// fanSleep is how long each fan node's task sleeps; fanYoung is the age
// below which a running fan task counts as young: launched so recently that
// at least fanSleep - fanYoung of its sleep is left, more than the time
// between a task writing "done" and its end being recorded, even under the
// load of the whole suite. The wider fanYoung, the surer a moment with only
// young tasks comes: a wave's launches spread as its slots free one by one,
// and under load they spread over more than a second.
const (
	fanSleep = 4 * time.Second
	fanYoung = 2500 * time.Millisecond
)

// setUpFanOut registers root → f01…fN → sink (N jobs sleeping fanSleep, at
// most four running at once on 2 CPUs) and returns the node ids.
func setUpFanOut(s *scheduler, n, retries int) []string {
	s.t.Helper()
	if code, body := s.do(http.MethodGet, "/api/app/wfapp", nil); code == http.StatusNotFound {
		s.must(http.MethodPost, "/api/app", appConfig{AppName: "wfapp", BootstrapScript: "none", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true})
	} else if code != http.StatusOK {
		s.t.Fatalf("GET /api/app/wfapp: %d %s", code, body)
	}
	ids := []string{"root"}
	nodes := []map[string]any{{"id": "root", "job": "root"}}
	s.must(http.MethodPost, "/api/job/register", wfJob("root", 0.1, "0", retries))
	var fan []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("f%02d", i)
		s.must(http.MethodPost, "/api/job/register", wfJob(id, 0.4, fmt.Sprint(fanSleep.Seconds()), retries))
		nodes = append(nodes, map[string]any{"id": id, "job": id, "dependsOn": []string{"root"}})
		fan, ids = append(fan, id), append(ids, id)
	}
	s.must(http.MethodPost, "/api/job/register", wfJob("sink", 0.1, "0", retries))
	nodes = append(nodes, map[string]any{"id": "sink", "job": "sink", "dependsOn": fan})
	s.must(http.MethodPost, "/api/workflow", map[string]any{"name": "fan", "nodes": nodes})
	return append(ids, "sink")
}

type wfNodeView struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Running []struct {
		TaskID     string    `json:"taskId"`
		LaunchedAt time.Time `json:"launchedAt"`
	} `json:"running"`
	Outputs map[string]string `json:"outputs"`
}

type wfRunView struct {
	State  string       `json:"state"`
	Reason string       `json:"reason"`
	Nodes  []wfNodeView `json:"nodes"`
}

func (s *scheduler) wfRun(name, id string) wfRunView {
	s.t.Helper()
	var v wfRunView
	s.getJSON("/api/workflow/"+name+"/runs/"+id, &v)
	return v
}

func (s *scheduler) wfTrigger(name, param string) string {
	s.t.Helper()
	var v struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal(s.must(http.MethodPost, "/api/workflow/"+name+"/trigger", map[string]string{"parameter": param}), &v); err != nil {
		s.t.Fatal(err)
	}
	return v.RunID
}

// fanCount is the fan nodes of a run at one look: how many succeeded, how
// many are not done, and of their running tasks how many were launched less
// than fanYoung ago (young) and how many earlier (old).
type fanCount struct{ succeeded, open, young, old int }

func countFan(v wfRunView) fanCount {
	var c fanCount
	for _, n := range v.Nodes {
		if !strings.HasPrefix(n.ID, "f") {
			continue
		}
		switch n.State {
		case "SUCCEEDED":
			c.succeeded++
		case "PENDING", "QUEUED", "RUNNING":
			c.open++
		}
		for _, r := range n.Running {
			if time.Since(r.LaunchedAt) > fanYoung {
				c.old++
			} else {
				c.young++
			}
		}
	}
	return c
}

// safeToKill reports a moment in the middle of the fan-out when no task is
// near its end: at least one fan node succeeded, one is not done, and
// every running task is young, so none can be between writing "done" and
// its end being recorded.
func safeToKill(v wfRunView) bool {
	c := countFan(v)
	return c.succeeded > 0 && c.open > 0 && c.young > 0 && c.old == 0
}

// launchMidFanOut reports a moment in the middle of the fan-out when a task
// was just launched, so that one runs through a leader change. Weaker than
// safeToKill, whose moment never came under load once the fan's launches
// spread out as their slots freed one by one: where mesos-local outlives
// the leader, a task that ends around the kill keeps its end for the new
// leader, so it needs no such care.
func launchMidFanOut(v wfRunView) bool {
	c := countFan(v)
	return c.succeeded > 0 && c.open > 0 && c.young > 0
}

// nodeRecord is what one node's job wrote: its starts (task id, source)
// and the task ids that wrote "done".
type nodeRecord struct {
	starts [][2]string
	done   []string
}

func readNodeLog(t testing.TB, out, node string) nodeRecord {
	t.Helper()
	var rec nodeRecord
	f, err := os.Open(filepath.Join(out, node+".log"))
	if os.IsNotExist(err) {
		return rec
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		switch {
		case len(parts) == 3 && parts[0] == "start":
			rec.starts = append(rec.starts, [2]string{parts[1], parts[2]})
		case len(parts) == 2 && parts[0] == "done":
			rec.done = append(rec.done, parts[1])
		default:
			t.Fatalf("%s.log: unexpected line %q", node, sc.Text())
		}
	}
	return rec
}

// checkExactlyOnce: every node completed exactly once (none lost, none
// run twice), by its last start, and started at most once by its workflow.
// A node whose task was running at the crash (retried) may have started
// again, only as a retry (FAILOVER) of that task (and none by its workflow
// when the crash came before its process started); every other node
// started exactly once. That one start may say FAILOVER: a launch that
// never started (its executor exited, idle, just as the task arrived, or
// the engine refused it) is launched again as a retry of the same
// execution (task.NeverStarted), and only a start is written. It returns
// the nodes that started more than once and those whose one start was
// such a retry.
func checkExactlyOnce(t *testing.T, out string, nodes []string, retried map[string]bool) (again, relaunched []string) {
	t.Helper()
	for _, n := range nodes {
		rec := readNodeLog(t, out, n)
		if len(rec.done) != 1 {
			t.Errorf("node %s completed %d times (%v), want once", n, len(rec.done), rec.done)
			continue
		}
		ready, seen := 0, map[string]bool{}
		for _, s := range rec.starts {
			if seen[s[0]] {
				t.Errorf("node %s: task %s started twice", n, s[0])
			}
			seen[s[0]] = true
			if s[1] != "FAILOVER" {
				ready++
			}
		}
		switch {
		case ready > 1:
			t.Errorf("node %s started %v: more than once by its workflow", n, rec.starts)
		case !retried[n] && len(rec.starts) != 1:
			t.Errorf("node %s started %v, want one start", n, rec.starts)
		}
		if last := rec.starts[len(rec.starts)-1][0]; last != rec.done[0] {
			t.Errorf("node %s: done by %s, but its last start was %s", n, rec.done[0], last)
		}
		switch {
		case len(rec.starts) > 1:
			again = append(again, n)
		case ready == 0:
			relaunched = append(relaunched, n)
		}
	}
	return again, relaunched
}

// kill -9 of the embedded scheduler in the middle of a 1 → 12 fan-out,
// restart on the same data dir: the run goes on and succeeds; every node
// completed exactly once, by the jobs' own records. The tasks running at
// the kill outlive it (their executors are taken over by the restarted
// scheduler); a launch the kill cut short may run again, as a retry of the
// same node execution, never as a second one.
func TestWorkflowSurvivesKill9MidFanOut(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, schedOpts{dataDir: dataDir})
	nodes := setUpFanOut(s1, 12, 2)
	out := outDir(t)
	id := s1.wfTrigger("fan", out)
	eventually(t, 2*waitLong, func() bool { return safeToKill(s1.wfRun("fan", id)) }, "the middle of the fan-out (run: %v)",
		late(func() any { return s1.wfRun("fan", id) }))
	before := s1.wfRun("fan", id)
	s1.kill9()
	t.Logf("killed with node states %v", nodeStates(before))

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	eventually(t, 3*waitLong, func() bool { st := s2.wfRun("fan", id).State; return st != "RUNNING" && st != "QUEUED" },
		"the run to end after the restart (run: %v)", late(func() any { return s2.wfRun("fan", id) }))
	v := s2.wfRun("fan", id)
	if v.State != "SUCCEEDED" {
		t.Fatalf("run %s (%s): %v", v.State, v.Reason, nodeStates(v))
	}
	// Tasks launched at the kill (safeToKill) run on; one whose launch the
	// kill cut short runs again, as a retry. A node queued at the last look
	// may have been launched in the moment before the kill.
	handed := map[string]bool{}
	for _, n := range before.Nodes {
		if n.State == "RUNNING" || n.State == "QUEUED" {
			handed[n.ID] = true
		}
	}
	again, relaunched := checkExactlyOnce(t, out, nodes, handed)
	t.Logf("nodes handed to their job at the kill: %v; started again as a retry: %v; started once, by a retry of a launch that never started: %v",
		sortedKeys(handed), again, relaunched)
	if b, _ := os.ReadFile(filepath.Join(out, "sink.inputs")); strings.TrimSpace(string(b)) != "12" {
		t.Errorf("sink got %q inputs, want the 12 fan nodes' outputs", b)
	}
}

func nodeStates(v wfRunView) map[string]string {
	out := map[string]string{}
	for _, n := range v.Nodes {
		out[n.ID] = n.State
	}
	return out
}

// A chain with a failing node: the alert (oneFailed) runs, the rest is
// skipped with the reason; cancel and retry through the API.
func TestWorkflowRulesCancelRetry(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.must(http.MethodPost, "/api/app", appConfig{AppName: "wfapp", BootstrapScript: "none", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true})
	for _, j := range []string{"extract", "load", "alert"} {
		s.must(http.MethodPost, "/api/job/register", wfJob(j, 0.1, "0", 0))
	}
	fail := wfJob("clean", 0.1, "0", 0)
	fail["props"] = map[string]string{"script.command.line": `[ -e "$ELASTICJOB_JOB_PARAMETER/fixed" ] #`}
	s.must(http.MethodPost, "/api/job/register", fail)
	s.must(http.MethodPost, "/api/workflow", map[string]any{"name": "etl", "nodes": []map[string]any{
		{"id": "extract", "job": "extract"}, {"id": "clean", "job": "clean", "dependsOn": []string{"extract"}},
		{"id": "load", "job": "load", "dependsOn": []string{"clean"}},
		{"id": "alert", "job": "alert", "dependsOn": []string{"extract", "clean"}, "trigger": "oneFailed"}}})
	out := outDir(t)
	id := s.wfTrigger("etl", out)
	eventually(t, waitLong, func() bool { return s.wfRun("etl", id).State == "FAILED" }, "the run to fail (run: %v)",
		late(func() any { return s.wfRun("etl", id) }))
	v := s.wfRun("etl", id)
	want := map[string]string{"extract": "SUCCEEDED", "clean": "FAILED", "load": "SKIPPED", "alert": "SUCCEEDED"}
	if got := nodeStates(v); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("node states %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "alert.inputs")); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("alert got %q inputs, want extract's output", b)
	}
	// Fix the cause and retry: extract and alert are kept, clean and load run.
	if err := os.WriteFile(filepath.Join(out, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.must(http.MethodPost, "/api/workflow/etl/runs/"+id+"/retry", nil)
	eventually(t, waitLong, func() bool { return s.wfRun("etl", id).State == "SUCCEEDED" }, "the retried run to succeed (run: %v)",
		late(func() any { return s.wfRun("etl", id) }))
	for node, want := range map[string]int{"extract": 1, "alert": 1, "load": 1} {
		if got := len(readNodeLog(t, out, node).done); got != want {
			t.Errorf("%s completed %d times, want %d", node, got, want)
		}
	}
	if code, body := s.do(http.MethodPost, "/api/workflow/etl/runs/"+id+"/cancel", nil); code != http.StatusConflict {
		t.Errorf("cancel of a finished run: %d %s, want 409", code, body)
	}
	// The history database: the run (its last state) and every node
	// execution of both attempts.
	eventually(t, waitLong, func() bool {
		var nodes, runs struct {
			Total int `json:"total"`
		}
		s.getJSON("/api/workflow/events/nodes?workflowName=etl&runId="+id, &nodes)
		s.getJSON("/api/workflow/events/runs?workflowName=etl&state=SUCCEEDED&attempt=2&runId="+id, &runs)
		return nodes.Total == 6 && runs.Total == 1
	}, "the run and its 6 node executions (4, then clean and load again) in the history")
}

// role is what a scheduler says of itself in /api/operate/cluster.
func (s *scheduler) role() string { return s.api().Role() }

// Leader change in the middle of a 1 → 12 fan-out: two schedulers on one
// ZooKeeper registry share mesos-local; the leader is killed with -9, the
// standby takes over; the tasks run on (their executors are mesos-local's)
// and the new leader goes on from the run's state in the registry: every
// node started once and completed once, none was lost; that one start may
// be a failover (below).
func TestWorkflowLeaderChangeMidFanOut(t *testing.T) {
	t.Parallel()
	zk := testproxy.ZK(t)
	ml := startMesosLocal(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	flags := []string{"--mesos-url", ml.url, "--allow-file-app-urls=true", "--zk-servers", zk,
		"--zk-namespace", fmt.Sprintf("ej-e2e-wf-%d", time.Now().UnixNano()), "--zk-session-timeout", "2s"}
	ss := []*scheduler{startScheduler(t, schedOpts{extra: flags}), startScheduler(t, schedOpts{extra: flags})}
	var lead, next *scheduler
	eventually(t, waitLong, func() bool {
		lead, next = nil, nil
		for i, s := range ss {
			if s.role() == "leader" {
				lead, next = s, ss[1-i]
			}
		}
		return lead != nil
	}, "a leader to be elected")
	// Through the standby, forwarded to the leader, once the standby knows it.
	app := appConfig{AppName: "wfapp", BootstrapScript: "none", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true}
	eventually(t, waitLong, func() bool { code, _ := next.do(http.MethodPost, "/api/app", app); return code == http.StatusOK },
		"the standby to forward a write to the leader")
	nodes := setUpFanOut(next, 12, 0)
	out := outDir(t)
	id := next.wfTrigger("fan", out)
	eventually(t, 2*waitLong, func() bool { return launchMidFanOut(lead.wfRun("fan", id)) }, "the middle of the fan-out (run: %v)",
		late(func() any { return lead.wfRun("fan", id) }))
	atKill := nodeStates(lead.wfRun("fan", id))
	t.Logf("killing the leader with node states %v", atKill)
	lead.kill9()
	eventually(t, waitLong, func() bool { return next.role() == "leader" }, "the standby to take over")
	eventually(t, 3*waitLong, func() bool { st := next.wfRun("fan", id).State; return st != "RUNNING" && st != "QUEUED" },
		"the run to end under the new leader (run: %v)", late(func() any { return next.wfRun("fan", id) }))
	if v := next.wfRun("fan", id); v.State != "SUCCEEDED" {
		t.Fatalf("run %s (%s): %v", v.State, v.Reason, nodeStates(v))
	}
	// Every node starts exactly once. A node open at the kill may have had
	// its launch committed by the old leader and never sent to Mesos (the
	// kill came in between): the new leader's reconciliation finds that
	// task unknown and launches it again as its failover. A launch of the
	// new leader may arrive as the executor, idle through the takeover,
	// exits: it never starts and runs as a retry. Either way the node's one
	// start says FAILOVER.
	_, relaunched := checkExactlyOnce(t, out, nodes, nil)
	t.Logf("nodes whose one start was a retry (FAILOVER): %v", relaunched)
}
