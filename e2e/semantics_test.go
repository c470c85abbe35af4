//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// events reads OUT/events of gate.sh: "start ID" / "end ID" lines.
func events(t testing.TB, out string) []string {
	b, err := os.ReadFile(filepath.Join(out, "events"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
}

func starts(t testing.TB, out string) int {
	return strings.Count(strings.Join(events(t, out), " "), "start")
}

// Triggers while an execution runs: with misfire=true each one runs after
// the current one, with misfire=false they collapse into one; executions
// of one job never overlap.
func TestMisfireQueueing(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	for _, misfire := range []bool{true, false} {
		name := "misfire_" + strconv.FormatBool(misfire)
		out := outDir(t)
		j := recorderJob(name, "rec", out, 1)
		j.Misfire = misfire
		j.Props = map[string]string{"script.command.line": "bin/gate.sh"}
		s.registerJob(j)
		s.triggerTaken(name, func() bool { return starts(t, out) == 1 })
		s.trigger(name)
		s.trigger(name)
		wantPending, wantRuns := 2, 3
		if !misfire {
			wantPending, wantRuns = 1, 2
		}
		if n := s.ready(name); n != wantPending {
			t.Errorf("%s: pending executions while one runs = %d, want %d", name, n, wantPending)
		}
		if n := starts(t, out); n != 1 {
			t.Errorf("%s: %d executions started while the first runs, want 1", name, n)
		}
		if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitLong, func() bool { return countRuns(t, out) >= wantRuns && s.idle(name) },
			"%s: %d runs and idle", name, wantRuns)
		runs := runsIn(t, out)
		if len(runs) != wantRuns {
			t.Errorf("%s: %d runs, want %d: %+v", name, len(runs), wantRuns, runs)
		}
		uniqueTaskIDs(t, runs)
		ev := events(t, out)
		for i := 0; i+3 < len(ev); i += 4 { // start ID end ID, never interleaved
			if ev[i] != "start" || ev[i+2] != "end" || ev[i+1] != ev[i+3] {
				t.Errorf("%s: executions overlap: %v", name, ev)
				break
			}
		}
		t.Logf("%s runs: %+v", name, runs)
	}
}

// kill -9 of the scheduler, and of its executors and tasks with it (an OOM
// kill, a lost machine), while a failover job's task runs: the restarted
// scheduler does not leave the task "running" forever but learns from its
// agent that the executor was gone and fails the shard over. (Executors
// and tasks that outlive the scheduler are taken over instead:
// restart_test.go.)
func TestRestartWhileRunning(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, schedOpts{dataDir: dataDir})
	s1.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out := outDir(t)
	j := recorderJob("crashy", "rec", out, 1)
	j.Failover = true
	j.Props = map[string]string{"script.command.line": "bin/sleep.sh"}
	s1.registerJob(j)
	pidFile := filepath.Join(out, "0.pid")
	s1.triggerTaken("crashy", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid := pidOf(t, pidFile)
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	eventually(t, waitLong, func() bool { return len(s1.running("crashy")) == 1 }, "crashy listed running")
	first := s1.running("crashy")[0].TaskID
	s1.Kill9()
	sandboxes := filepath.Join(dataDir, "mesos")
	harness.KillSandboxProcs(sandboxes)
	eventually(t, waitLong, func() bool { return len(harness.SandboxProcs(sandboxes)) == 0 && !alive(pid) },
		"the executors and the job process %d to die", pid)

	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	eventually(t, waitLong, func() bool {
		rt := s2.running("crashy")
		return len(rt) == 0 || rt[0].TaskID != first
	}, "the lost task %s to leave the running list (running: %v)", first, late(func() any { return s2.running("crashy") }))
	eventually(t, waitLong, func() bool { return countRuns(t, out) >= 2 }, "the lost shard to be failed over (runs: %v)",
		late(func() any { return runsIn(t, out) }))
	runs := runsIn(t, out)
	if r := runs[1]; r.Source != "FAILOVER" || !strings.Contains(r.TaskID, "@-@FAILOVER@-@") {
		t.Errorf("relaunch after the crash %+v, want a FAILOVER task", r)
	}
	uniqueTaskIDs(t, runs)
	s2.must(http.MethodDelete, "/api/job/deregister", "crashy")
	eventually(t, waitLong, func() bool { return s2.idle("crashy") }, "crashy deregistered and idle")
}
