//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// whereRun is one line of bin/where.sh: the cron instant a run served and the directory it
// ran in.
type whereRun struct {
	Nominal time.Time
	Dir     string
}

func whereRuns(t testing.TB, out string) []whereRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "where"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// A run's shell creates the file before its echo writes the line: read only lines
	// already ended, a reader between the two sees an empty or partial last line.
	if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
		b = b[:i]
	} else {
		return nil
	}
	var runs []whereRun
	for _, l := range strings.Split(string(b), "\n") {
		nominal, dir, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("where: malformed line %q", l)
		}
		at, err := time.Parse(time.RFC3339Nano, nominal)
		if err != nil {
			t.Fatalf("where: a run with no cron instant: %q", l)
		}
		runs = append(runs, whereRun{Nominal: at, Dir: dir})
	}
	return runs
}

// onLocalAndRemote starts a Mesos master with an agent of its own ("remote", bin/mesos-local
// in workDir on port, as a real Mesos cluster is reached: mesos_url) and a scheduler on two
// clusters at once, its embedded engine ("local") and remote, with extra flags, the
// recorder app published. The agents of both clusters run on this machine: a file:// app
// URL reaches them.
func onLocalAndRemote(t *testing.T, workDir string, port int, extra ...string) (*scheduler, *mesosLocal) {
	t.Helper()
	ml := startMesosLocal(t, workDir, port)
	list := filepath.Join(t.TempDir(), "clusters.yaml")
	doc := "clusters:\n  - {name: local, engine: embedded}\n  - {name: remote, engine: mesos, mesos_url: \"" + ml.url + "\"}\n"
	if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, schedOpts{extra: append([]string{"--clusters-file", list, "--allow-file-app-urls=true"}, extra...)})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	return s, ml
}

// TestJobMovesBetweenClusters: one scheduler on two clusters at once, its embedded engine
// ("local") and a Mesos master with an agent of its own ("remote", bin/mesos-local, as a
// real Mesos cluster is reached: mesos_url). A cron job placed on remote runs there; its
// clusters changed to local, its next fires run on the embedded agent, then back on remote:
// each fire ran once, none was missed. A drain of the job's only cluster holds its next fire
// with the reason naming the cluster, and the undrain lets it run.
func TestJobMovesBetweenClusters(t *testing.T) {
	t.Parallel()
	s, ml := onLocalAndRemote(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	out := outDir(t)
	j := recorderJob("mover", "rec", out, 1)
	j.Cron, j.Misfire, j.Clusters = "*/2 * * * * ?", true, []string{"remote"}
	j.Props = map[string]string{"script.command.line": "bin/where.sh"}
	s.registerJob(j)

	onRemote := func(r whereRun) bool { return strings.HasPrefix(r.Dir, ml.workDir) }
	onLocal := func(r whereRun) bool { return strings.HasPrefix(r.Dir, filepath.Join(s.dataDir, "mesos")) }
	count := func(on func(whereRun) bool) int {
		n := 0
		for _, r := range whereRuns(t, out) {
			if on(r) {
				n++
			}
		}
		return n
	}
	move := func(to string) {
		t.Helper()
		j.Clusters = []string{to}
		s.must(http.MethodPut, "/api/job/update", j)
	}
	eventually(t, waitLong, func() bool { return count(onRemote) >= 2 }, "two fires on remote (runs: %v)", late(func() any { return whereRuns(t, out) }))
	if n := count(onLocal); n != 0 {
		t.Fatalf("%d runs on local, where the job may not run", n)
	}

	move("local")
	before := len(whereRuns(t, out))
	eventually(t, waitLong, func() bool { return count(onLocal) >= 2 }, "two fires on local after the move (runs: %v)", late(func() any { return whereRuns(t, out) }))
	// A fire due when the update landed may have been placed on remote already; every one after
	// it runs on local.
	for _, r := range whereRuns(t, out)[before+1:] {
		if !onLocal(r) {
			t.Fatalf("a run on %s after the move to local had landed (runs: %v)", r.Dir, whereRuns(t, out))
		}
	}

	move("remote")
	remoteBefore := count(onRemote)
	eventually(t, waitLong, func() bool { return count(onRemote) >= remoteBefore+2 }, "two fires on remote again (runs: %v)", late(func() any { return whereRuns(t, out) }))

	// Drained, the job's only cluster takes no new work: its next fire waits, named so (and
	// the fires due meanwhile collapse into it, misfire's rule, so the continuity below is of
	// the moves only).
	moved := whereRuns(t, out)
	s.must(http.MethodPut, "/api/operate/clusters/remote/drain", nil)
	var reason string
	eventually(t, waitLong, func() bool {
		var ready []struct {
			JobName string `json:"jobName"`
			Waiting *struct {
				Reason  string `json:"reason"`
				Message string `json:"message"`
			} `json:"waiting"`
		}
		s.getJSON("/api/job/tasks/ready", &ready)
		for _, r := range ready {
			if r.JobName == "mover" && r.Waiting != nil && r.Waiting.Reason == "cluster_unavailable" {
				reason = r.Waiting.Message
				return true
			}
		}
		return false
	}, "mover's fire to wait cluster_unavailable while remote is drained")
	if !strings.Contains(reason, "remote (drained)") {
		t.Errorf("waiting message %q does not name the drained cluster", reason)
	}
	var views []struct {
		Name    string `json:"name"`
		Engine  string `json:"engine"`
		Drained *struct {
			Cluster string `json:"cluster"`
		} `json:"drained"`
		Agents int `json:"agents"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/operate/clusters", nil), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Name != "local" || views[0].Engine != "embedded" || views[0].Drained != nil ||
		views[1].Name != "remote" || views[1].Engine != "mesos" || views[1].Drained == nil || views[0].Agents != 1 || views[1].Agents != 1 {
		t.Errorf("clusters %+v", views)
	}
	held := count(onRemote)
	s.must(http.MethodDelete, "/api/operate/clusters/remote/drain", nil)
	eventually(t, waitLong, func() bool { return count(onRemote) > held }, "a fire on remote once undrained")

	s.must(http.MethodDelete, "/api/job/deregister", "mover")
	eventually(t, waitLong, func() bool { return s.idle("mover") }, "mover deregistered and idle")
	for _, r := range whereRuns(t, out) {
		if !onLocal(r) && !onRemote(r) {
			t.Errorf("a run in %s, neither cluster's sandbox", r.Dir)
		}
	}
	runs := moved
	var at []time.Time
	for _, r := range runs {
		at = append(at, r.Nominal)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d != 2*time.Second {
			t.Errorf("fires %s and %s: %v apart, want 2s (a fire run twice or missed; runs: %v)", at[i-1].Format(time.TimeOnly), at[i].Format(time.TimeOnly), d, runs)
		}
	}
	uniqueTaskIDs(t, runsIn(t, out))
}

// TestLostClusterFailsOver: a failover job's task runs on remote (a Mesos master with an
// agent of its own); remote is killed. Past task_unreachable_timeout its task counts as
// lost and the shard runs again on local, the other cluster the job may use. remote comes
// back with the old task still running under its executor: the scheduler finds it
// replaced and kills it, once. The shard ran once at a time: the old task was never
// counted as running again.
func TestLostClusterFailsOver(t *testing.T) {
	t.Parallel()
	workDir, port := filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t)
	s, ml := onLocalAndRemote(t, workDir, port, "--task-unreachable-timeout", "2s")
	// The namespace's clusters, not the job's: remote alone while the shard first launches
	// (a round places it on the first cluster with room now, and local may offer first),
	// then both, which a running TRANSIENT shard does not notice (a job's update would stop it).
	s.must(http.MethodPut, "/api/namespaces/default", map[string]any{"clusters": []string{"remote"}})
	out := outDir(t)
	j := recorderJob("kept", "rec", out, 1)
	j.Failover = true
	j.Props = map[string]string{"script.command.line": "bin/gate.sh"}
	s.registerJob(j)
	s.triggerTaken("kept", func() bool { return starts(t, out) == 1 })
	eventually(t, waitLong, func() bool {
		rt := s.running("kept")
		return len(rt) == 1 && strings.HasPrefix(rt[0].AgentID, "remote:") && rt[0].State == "TASK_RUNNING"
	}, "kept running on remote (running: %v)", late(func() any { return s.running("kept") }))
	first := s.running("kept")[0].TaskID
	s.must(http.MethodPut, "/api/namespaces/default", map[string]any{"clusters": []string{"remote", "local"}})
	ml.kill9()

	eventually(t, waitLong, func() bool {
		rt := s.running("kept")
		return len(rt) == 1 && strings.HasPrefix(rt[0].AgentID, "local:")
	},
		"kept's shard to run again on local once remote's task counts as lost (running: %v)", late(func() any { return s.running("kept") }))
	second := s.running("kept")[0].TaskID
	if second == first {
		t.Fatalf("the shard on local is the lost task %s", first)
	}
	if n := len(harness.SandboxProcs(workDir)); n < 2 {
		t.Fatalf("%d processes outlived remote's master, want its executor and the lost task", n)
	}

	startMesosLocal(t, workDir, port)
	eventually(t, waitLong, func() bool { return len(harness.SandboxProcs(workDir)) == 0 },
		"the replaced task on remote to be killed once remote is back (processes: %v)", late(func() any { return harness.SandboxProcs(workDir) }))
	if rt := s.running("kept"); len(rt) != 1 || rt[0].TaskID != second {
		t.Fatalf("running after remote came back: %+v, want only %s", rt, second)
	}
	if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool { return s.idle("kept") }, "kept idle")
	if ev := events(t, out); !slices.Contains(ev, second) || strings.Count(strings.Join(ev, " "), "start") != 2 {
		t.Errorf("events %v: want the shard started on remote, then on local, and no third start", ev)
	}
}

// TestMigrationRunbook follows docs/clusters.md's runbook with a Mesos master of its own
// (bin/mesos-local, "mesos-dc1") and the embedded engine standing in for the new cluster
// ("k8s-prod"): a scheduler on mesos_url with a task running; restarted on both clusters,
// Mesos first, the task is kept and ends where it ran; the namespace pinned to Mesos, then
// moved; Mesos drained until empty; restarted on the new cluster alone, the job runs on.
func TestMigrationRunbook(t *testing.T) {
	t.Parallel()
	ml := startMesosLocal(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	data := filepath.Join(t.TempDir(), "data")
	// Step 1: upgraded in place, on Mesos.
	s1 := startScheduler(t, schedOpts{dataDir: data, extra: []string{"--mesos-url", ml.url, "--allow-file-app-urls=true"}})
	s1.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	held, out := outDir(t), outDir(t)
	g := recorderJob("held", "rec", held, 1)
	g.Props = map[string]string{"script.command.line": "bin/gate.sh"}
	s1.registerJob(g)
	s1.triggerTaken("held", func() bool { return starts(t, held) == 1 })
	eventually(t, waitLong, func() bool { return len(s1.running("held")) == 1 }, "held running on Mesos")
	kept := s1.running("held")[0].TaskID
	s1.Stop(t)

	// Step 3: both clusters, Mesos first.
	list := filepath.Join(t.TempDir(), "clusters.yaml")
	write := func(doc string) {
		if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("clusters:\n  - {name: mesos-dc1, engine: mesos, mesos_url: \"" + ml.url + "\"}\n  - {name: k8s-prod, engine: embedded}\n")
	s2 := startScheduler(t, schedOpts{dataDir: data, extra: []string{"--clusters-file", list, "--allow-file-app-urls=true"}})
	e := newEjctl(t, s2)
	ls := e.must(0, "cluster", "ls")
	for _, w := range []string{"mesos-dc1", "k8s-prod", "mesos", "embedded"} {
		if !strings.Contains(ls, w) {
			t.Fatalf("cluster ls lacks %q:\n%s", w, ls)
		}
	}
	eventually(t, waitLong, func() bool { rt := s2.running("held"); return len(rt) == 1 && rt[0].TaskID == kept },
		"the task started before the switch to be kept (running: %v)", late(func() any { return s2.running("held") }))

	// Step 4: the namespace pinned to Mesos; a cron job runs there.
	e.must(0, "ns", "set", "default", "--clusters", "mesos-dc1")
	j := recorderJob("nightly", "rec", out, 1)
	j.Cron, j.Misfire = "*/2 * * * * ?", true
	j.Props = map[string]string{"script.command.line": "bin/where.sh"}
	s2.registerJob(j)
	onMesos := func(r whereRun) bool { return strings.HasPrefix(r.Dir, ml.workDir) }
	onNew := func(r whereRun) bool { return strings.HasPrefix(r.Dir, filepath.Join(data, "mesos")) }
	count := func(on func(whereRun) bool) int {
		n := 0
		for _, r := range whereRuns(t, out) {
			if on(r) {
				n++
			}
		}
		return n
	}
	eventually(t, waitLong, func() bool { return count(onMesos) >= 2 }, "nightly on Mesos")

	// Step 6: the namespace moved.
	e.must(0, "ns", "set", "default", "--clusters", "k8s-prod,mesos-dc1")
	eventually(t, waitLong, func() bool { return count(onNew) >= 2 }, "nightly on the new cluster (runs: %v)", late(func() any { return whereRuns(t, out) }))

	// Step 7: Mesos drained; the task from before the switch ends where it ran, and the
	// drain returns once Mesos is empty.
	drained := make(chan string, 1)
	go func() {
		o, errs, code := e.run("", "cluster", "drain", "mesos-dc1", "--wait", "--timeout", "5m")
		drained <- fmt.Sprintf("exit %d: %s%s", code, o, errs)
	}()
	if err := os.WriteFile(filepath.Join(held, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-drained:
		if !strings.Contains(got, "exit 0") || !strings.Contains(got, "cluster mesos-dc1 drained: empty") {
			t.Fatalf("cluster drain --wait: %s", got)
		}
	case <-time.After(waitLong):
		t.Fatal("cluster drain --wait did not return")
	}
	if runs := runsIn(t, held); len(runs) != 1 || runs[0].TaskID != kept {
		t.Fatalf("held's runs %+v, want only %s (kept, not run again)", runs, kept)
	}
	s2.Stop(t)

	// Step 8: Mesos switched off.
	write("clusters:\n  - {name: k8s-prod, engine: embedded}\n")
	s3 := startScheduler(t, schedOpts{dataDir: data, extra: []string{"--clusters-file", list, "--allow-file-app-urls=true"}})
	ls = newEjctl(t, s3).must(0, "cluster", "ls")
	if strings.Contains(ls, "mesos-dc1") || !strings.Contains(ls, "k8s-prod") {
		t.Fatalf("cluster ls after Mesos is switched off:\n%s", ls)
	}
	before := count(onNew)
	eventually(t, waitLong, func() bool { return count(onNew) >= before+2 }, "nightly on the new cluster alone")
	s3.must(http.MethodDelete, "/api/job/deregister", "nightly")
	eventually(t, waitLong, func() bool { return s3.idle("nightly") }, "nightly deregistered and idle")
	var at []time.Time
	for _, r := range whereRuns(t, out) {
		if !onMesos(r) && !onNew(r) {
			t.Errorf("a run in %s, neither cluster's sandbox", r.Dir)
		}
		at = append(at, r.Nominal)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		if at[i].Equal(at[i-1]) {
			t.Errorf("the instant %s ran twice", at[i].Format(time.TimeOnly))
		}
	}
}

// TestDaemonMovesWithOverlap: a DAEMON job that declares moveOverlapSeconds, running on
// remote (a Mesos master of its own), has its clusters changed to local (the embedded
// engine). The change does not restart it; its shard starts on local while the old task
// runs on remote, and the old task is killed only once the new one runs: the new task's
// TASK_RUNNING is recorded before the old one's TASK_KILLED, whose message says why. The
// API lists the old task as retiring while the overlap lasts (when a poll catches it),
// and remote is empty after.
func TestDaemonMovesWithOverlap(t *testing.T) {
	t.Parallel()
	s, ml := onLocalAndRemote(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	out := outDir(t)
	job := map[string]any{
		"jobName": "resident", "appName": "rec", "jobExecutionType": "DAEMON", "cron": "*/1 * * * * ?",
		"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 32, "jobType": "SCRIPT",
		"clusters": []string{"remote"}, "moveOverlapSeconds": 60,
		"props": map[string]string{"script.command.line": `pwd >> "` + out + `/dirs"`},
	}
	s.must(http.MethodPost, "/api/job/register", job)
	runsOn := func(dir string) int {
		b, _ := os.ReadFile(filepath.Join(out, "dirs"))
		n := 0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, dir) {
				n++
			}
		}
		return n
	}
	type row struct {
		TaskID   string `json:"taskId"`
		AgentID  string `json:"agentId"`
		State    string `json:"state"`
		Retiring bool   `json:"retiring"`
	}
	rows := func() []row {
		var all []struct {
			row
			JobName string `json:"jobName"`
		}
		s.getJSON("/api/job/tasks/running", &all)
		var out []row
		for _, r := range all {
			if r.JobName == "resident" {
				out = append(out, r.row)
			}
		}
		return out
	}
	eventually(t, waitLong, func() bool {
		rs := rows()
		return len(rs) == 1 && strings.HasPrefix(rs[0].AgentID, "remote:") && rs[0].State == "TASK_RUNNING" && runsOn(ml.workDir) >= 2
	}, "resident running on remote (running: %v)", late(func() any { return rows() }))
	old := rows()[0].TaskID

	job["clusters"] = []string{"local"}
	s.must(http.MethodPut, "/api/job/update", job)
	sawRetiring := false
	var moved string
	eventually(t, waitLong, func() bool {
		rs := rows()
		for _, r := range rs {
			sawRetiring = sawRetiring || (r.Retiring && r.TaskID == old)
		}
		if len(rs) == 1 && !rs[0].Retiring && strings.HasPrefix(rs[0].AgentID, "local:") && rs[0].State == "TASK_RUNNING" {
			moved = rs[0].TaskID
			return true
		}
		return false
	}, "resident moved to local (running: %v)", late(func() any { return rows() }))
	local := filepath.Join(s.dataDir, "mesos")
	eventually(t, waitLong, func() bool { return runsOn(local) >= 1 }, "a run on local")

	type trace struct {
		TaskID       string    `json:"taskId"`
		State        string    `json:"state"`
		Message      string    `json:"message"`
		CreationTime time.Time `json:"creationTime"`
	}
	var newRunning, oldKilled *trace
	eventually(t, waitLong, func() bool {
		var page struct {
			Rows []trace `json:"rows"`
		}
		s.getJSON("/api/job/events/statusTraces?per_page=100&jobName=resident", &page)
		newRunning, oldKilled = nil, nil
		for i, r := range page.Rows {
			switch {
			case r.TaskID == moved && r.State == "TASK_RUNNING":
				newRunning = &page.Rows[i]
			case r.TaskID == old && r.State == "TASK_KILLED":
				oldKilled = &page.Rows[i]
			}
		}
		return newRunning != nil && oldKilled != nil
	}, "the new task's TASK_RUNNING and the old one's TASK_KILLED in history")
	if oldKilled.CreationTime.Before(newRunning.CreationTime) {
		t.Errorf("the old task was killed at %v, before the new one ran at %v", oldKilled.CreationTime, newRunning.CreationTime)
	}
	if !strings.Contains(oldKilled.Message, "its replacement started on another cluster") {
		t.Errorf("the old task's end says %q, not why it was stopped", oldKilled.Message)
	}
	var views []struct {
		Name         string `json:"name"`
		RunningTasks int    `json:"runningTasks"`
	}
	eventually(t, waitLong, func() bool {
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/operate/clusters", nil), &views); err != nil {
			t.Fatal(err)
		}
		return len(views) == 2 && views[1].Name == "remote" && views[1].RunningTasks == 0 && views[0].RunningTasks == 1
	}, "remote empty, local running the shard (clusters: %+v)", late(func() any { return views }))
	t.Logf("the API listed the old task as retiring during the overlap: %v", sawRetiring)
	s.must(http.MethodDelete, "/api/job/resident/deregister", nil)
	eventually(t, waitLong, func() bool { return len(rows()) == 0 }, "the deregistered daemon to stop")
}
