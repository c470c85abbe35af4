//go:build e2e

package realmesos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestAdoptsTaskLeftRunningInOriginalTree: a TRANSIENT task runs on the
// real agent under a framework whose scheduler is gone; the registry is the
// original 3.0.4's (YAML app and job written by a plain ZooKeeper client,
// the task's bare id under /state/running, the framework id under
// /ha/framework_id). The scheduler started on that tree subscribes with the
// framework id, reconciles the task as running, lets it run to its end,
// records that end, and launches nothing for the shard: one start, one end.
//
// The task was launched by this repository's scheduler (killed with -9
// before the tree is written), with this repository's executor: no build of
// the original is at hand. What is tested is the new scheduler's side:
// the original's tree, its framework id and its running entry on a real
// master.
func TestAdoptsTaskLeftRunningInOriginalTree(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	servers := requireZK(t)
	a, conn, nsA := startStandIn(t, m, servers)
	a.publishApp("recorder", recorderURL(), "bin/slow.sh")
	out := outDir(t)
	a.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "left", "appName": "recorder",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "shardingItemParameters": "0=6",
		"jobParameter": out, "cpuCount": 0.1, "memoryMB": 32})
	a.trigger("left")
	eventually(t, waitLong, func() bool { return len(slowLines(t, out, "start")) == 1 }, "the shard to start")
	taskID := strings.TrimPrefix(slowLines(t, out, "start")[0], "0 ")
	fw := frameworkIDIn(t, conn, nsA)
	a.kill9()

	nsB := fmt.Sprintf("ej-realmesos-upgrade-%d", time.Now().UnixNano())
	for p, v := range original304Tree("bin/slow.sh", "left", "TRANSIENT", "0 0 0 1 1 ? 2099", "0=6", out, taskID, fw) {
		zkCreateAll(t, conn, "/"+nsB+p, v)
	}
	b := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(),
		extra: []string{"--zk-servers", servers, "--zk-namespace", nsB}})[0]
	if !strings.Contains(b.Log(), "framework_id="+fw) {
		t.Errorf("the scheduler did not subscribe with the original's framework id %s", fw)
	}
	eventually(t, waitLong, func() bool { return len(slowLines(t, out, "end")) == 1 }, "the adopted task to end")
	eventually(t, waitLong, func() bool { return b.idle("left") }, "the task's end recorded, nothing queued")
	if s, e := slowLines(t, out, "start"), slowLines(t, out, "end"); len(s) != 1 || len(e) != 1 || s[0] != e[0] {
		t.Fatalf("starts %v, ends %v: want the one adopted task, started and ended once", s, e)
	}
	if !strings.Contains(b.Log(), `msg="reconciling running tasks before launching"`) || strings.Contains(b.Log(), `msg="task failed"`) {
		t.Errorf("the adopted task was not reconciled before launching, or failed")
	}
	eventually(t, waitLong, func() bool {
		rows := b.executions("left")
		return len(rows) == 1 && rows[0].TaskID == taskID && rows[0].Success && rows[0].CompleteTime != ""
	}, "the adopted task's end recorded once in the history (rows: %v)", lateRows{b, "left"})
	if fws := m.activeFrameworks(); len(fws) != 1 {
		t.Errorf("active frameworks at the master: %v, want the original's one", fws)
	}
}

// TestReplacesDaemonLeftRunningInOriginalTree: a DAEMON task (its cron of
// every second inside the executor) runs on the real agent under a
// framework whose scheduler is gone, in the original 3.0.4's tree. The
// scheduler started on that tree subscribes with the framework id and
// replaces the task with its own exactly once: the old task is killed,
// one new task runs the job's cron, and no other is launched. (As above,
// the old task's executor is this repository's.)
func TestReplacesDaemonLeftRunningInOriginalTree(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	servers := requireZK(t)
	a, conn, nsA := startStandIn(t, m, servers)
	a.publishApp("recorder", recorderURL(), "bin/record.sh")
	out := outDir(t)
	a.registerJob("resident", "recorder", "", out, 1)
	a.must(http.MethodPut, "/api/job/update", map[string]any{"jobName": "resident", "appName": "recorder",
		"jobExecutionType": "DAEMON", "cron": "* * * * * ?", "shardingTotalCount": 1, "jobParameter": out,
		"cpuCount": 0.1, "memoryMB": 32})
	eventually(t, waitLong, func() bool { return len(runsIn(t, out)) >= 2 }, "two runs of the daemon")
	old := runsIn(t, out)[0].TaskID
	fw := frameworkIDIn(t, conn, nsA)
	a.kill9()

	nsB := fmt.Sprintf("ej-realmesos-upgrade-%d", time.Now().UnixNano())
	for p, v := range original304Tree("bin/record.sh", "resident", "DAEMON", "'* * * * * ?'", "''", out, old, fw) {
		zkCreateAll(t, conn, "/"+nsB+p, v)
	}
	b := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(),
		extra: []string{"--zk-servers", servers, "--zk-namespace", nsB}})[0]
	newRuns := func() []string {
		var ids []string
		for _, r := range runsIn(t, out) {
			if r.TaskID != old {
				ids = append(ids, r.TaskID)
			}
		}
		return ids
	}
	eventually(t, waitLong, func() bool { return len(newRuns()) >= 3 }, "three runs of the replacing task")
	ids := map[string]bool{}
	for _, id := range newRuns() {
		ids[id] = true
	}
	if len(ids) != 1 {
		t.Fatalf("replacing tasks %v, want exactly one", ids)
	}
	runs := runsIn(t, out)
	for i, r := range runs {
		if r.TaskID != old && i+1 < len(runs) && slices.ContainsFunc(runs[i+1:], func(x jobRun) bool { return x.TaskID == old }) {
			t.Fatalf("the original's task ran on after its replacement started: %v", runs)
		}
	}
	var running []struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(b.must(http.MethodGet, "/api/job/tasks/running", nil), &running); err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || !ids[running[0].TaskID] {
		t.Fatalf("running: %+v, want the one replacing task", running)
	}
	if !strings.Contains(b.Log(), "replacing a DAEMON task the original left running") {
		t.Error("the scheduler did not say it replaced the original's task")
	}
}

// startStandIn starts the scheduler that stands in for the original: on a
// fresh ZooKeeper namespace, its executors kept through its death.
func startStandIn(t *testing.T, m *mesosCluster, servers string) (*scheduler, *zk.Conn, string) {
	t.Helper()
	ns := fmt.Sprintf("ej-realmesos-orig-%d", time.Now().UnixNano())
	a := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(),
		extra: []string{"--zk-servers", servers, "--zk-namespace", ns, "--executor-idle-timeout", "10m"}})[0]
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return a, conn, ns
}

// frameworkIDIn reads the framework id a scheduler persisted in ns.
func frameworkIDIn(t *testing.T, conn *zk.Conn, ns string) string {
	t.Helper()
	fw, _, err := conn.Get("/" + ns + "/ha/framework_id")
	if err != nil || len(fw) == 0 {
		t.Fatalf("framework id: %q %v", fw, err)
	}
	return string(fw)
}

// original304Tree is the tree the original 3.0.4 leaves with the recorder
// app (bootstrap script bootstrap), one job of one shard, its task taskID
// running under framework fw: YamlEngine's YAML, keys in alphabetical
// order, the task's bare id, the framework id as text.
func original304Tree(bootstrap, job, execType, cron, params, out, taskID, fw string) map[string]string {
	return map[string]string{
		"/config/app/recorder": "appCacheEnable: true\n" +
			"appName: recorder\n" +
			"appURL: " + recorderURL() + "\n" +
			"bootstrapScript: " + bootstrap + "\n" +
			"cpuCount: 0.1\n" +
			"eventTraceSamplingCount: 0\n" +
			"memoryMB: 64.0\n",
		"/config/job/" + job: "appName: recorder\n" +
			"cpuCount: 0.1\n" +
			"cron: " + cron + "\n" +
			"description: ''\n" +
			"disabled: false\n" +
			"failover: true\n" +
			"jobExecutionType: " + execType + "\n" +
			"jobName: " + job + "\n" +
			"jobParameter: " + out + "\n" +
			"maxTimeDiffSeconds: -1\n" +
			"memoryMB: 32.0\n" +
			"misfire: false\n" +
			"monitorExecution: true\n" +
			"overwrite: false\n" +
			"reconcileIntervalMinutes: 10\n" +
			"shardingItemParameters: " + params + "\n" +
			"shardingTotalCount: 1\n",
		"/state/running/" + job + "/" + job + "@-@0": taskID,
		"/ha/framework_id":                           fw,
	}
}

// idle reports whether the job has nothing ready, failing over or running (read
// in the order a launch moves work, so work in flight is never missed).
func (s *scheduler) idle(job string) bool {
	for _, q := range []string{"ready", "failover", "running"} {
		var rows []struct {
			JobName string `json:"jobName"`
		}
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/"+q, nil), &rows); err != nil {
			s.t.Fatal(err)
		}
		for _, r := range rows {
			if r.JobName == job {
				return false
			}
		}
	}
	return true
}

// zkCreateAll creates p holding v, and its missing parents empty, as the
// original's Curator client did.
func zkCreateAll(t *testing.T, conn *zk.Conn, p, v string) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if _, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(p, []byte(v), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

// lateRows prints a job's history rows when a wait fails.
type lateRows struct {
	s   *scheduler
	job string
}

func (l lateRows) String() string { return fmt.Sprintf("%+v", l.s.executions(l.job)) }
