//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// mesosLocal is one bin/mesos-local process.
type mesosLocal struct {
	t       testing.TB
	url     string
	workDir string
	outPath string // its stdout: the URL line
	logPath string // its stderr: the log
	cmd     *exec.Cmd
	exited  chan struct{}
}

var mesosLocalURL = regexp.MustCompile(`(?m)^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// startMesosLocal starts bin/mesos-local on port with workDir (an agent of
// 2 cpus and 4096 MB), waits for the URL it prints and stops it at cleanup
// (SIGTERM, SIGKILL after harness.StopGrace), then what it left running
// (mesos-local --recover=cleanup).
func startMesosLocal(t testing.TB, workDir string, port int) *mesosLocal {
	t.Helper()
	return startMesosLocalWith(t, workDir, port, "--cpus", "2", "--mem-mb", "4096")
}

// startMesosLocalWith is startMesosLocal with other flags than the agent's
// resources.
func startMesosLocalWith(t testing.TB, workDir string, port int, flags ...string) *mesosLocal {
	t.Helper()
	logDir := t.TempDir()
	m := &mesosLocal{t: t, workDir: workDir, exited: make(chan struct{}),
		outPath: filepath.Join(logDir, "mesos-local.out"), logPath: filepath.Join(logDir, "mesos-local.log")}
	out, err := os.Create(m.outPath)
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(schedulerBin), "mesos-local")
	m.cmd = exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--work-dir", workDir}, flags...)...)
	m.cmd.Stdout, m.cmd.Stderr = out, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		out.Close()
		logf.Close()
		close(m.exited)
	}()
	t.Cleanup(func() {
		m.stop()
		harness.StopEverything(t, workDir, bin, "--work-dir", workDir, "--port", strconv.Itoa(port))
		if t.Failed() {
			b, _ := os.ReadFile(m.logPath)
			t.Logf("mesos-local log (%s):\n%s", m.logPath, harness.Tail(string(b), 100))
		}
	})
	eventually(t, waitLong, func() bool {
		select {
		case <-m.exited:
			b, _ := os.ReadFile(m.logPath)
			t.Fatalf("mesos-local exited during start-up: %v\n%s", m.cmd.ProcessState, b)
		default:
		}
		b, _ := os.ReadFile(m.outPath)
		if sm := mesosLocalURL.FindSubmatch(b); sm != nil {
			m.url = string(sm[1])
		}
		return m.url != ""
	}, "mesos-local to print its URL")
	if want := "http://127.0.0.1:" + strconv.Itoa(port); m.url != want {
		t.Fatalf("mesos-local printed %s, want %s", m.url, want)
	}
	return m
}

// stop sends SIGTERM and waits, SIGKILL after harness.StopGrace. Idempotent.
func (m *mesosLocal) stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		if !m.cmd.ProcessState.Success() {
			m.t.Errorf("mesos-local exited with %v after SIGTERM", m.cmd.ProcessState)
		}
	case <-time.After(harness.StopGrace):
		m.t.Errorf("mesos-local did not stop within %v of SIGTERM; killing it", harness.StopGrace)
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

func (m *mesosLocal) kill9() {
	_ = m.cmd.Process.Kill()
	<-m.exited
}

// sandboxStdouts lists the task stdout files in mesos-local's sandboxes.
func (m *mesosLocal) sandboxStdouts() []string {
	files, _ := filepath.Glob(filepath.Join(m.workDir, "slaves", "*", "frameworks", "*", "executors", "*",
		"runs", "*", "tasks", "*", "stdout"))
	return files
}

func onMesos(m *mesosLocal) schedOpts {
	return schedOpts{extra: []string{"--mesos-url", m.url, "--allow-file-app-urls=true"}} // agents run on this machine
}

// Two schedulers, each with its own registry, share one mesos-local: each
// registers as a framework of its own and runs its cron job in
// mesos-local's sandboxes; neither starts an embedded master.
func TestSchedulersShareMesosLocal(t *testing.T) {
	t.Parallel()
	ml := startMesosLocal(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	var outs []string
	var scheds []*scheduler
	for i := range 2 {
		s := startScheduler(t, onMesos(ml))
		s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
		out := outDir(t)
		j := recorderJob("shared"+strconv.Itoa(i), "rec", out, 1)
		j.Cron = "* * * * * ?"
		s.registerJob(j)
		outs, scheds = append(outs, out), append(scheds, s)
	}
	for i, s := range scheds {
		eventually(t, waitLong, func() bool { return countRuns(t, outs[i]) >= 2 },
			"scheduler %d's cron job to run twice on mesos-local (runs: %v)", i, late(func() any { return runsIn(t, outs[i]) }))
		job := "shared" + strconv.Itoa(i)
		s.must(http.MethodDelete, "/api/job/deregister", job)
		eventually(t, waitLong, func() bool { return s.idle(job) }, "%s deregistered and idle", job)
		uniqueTaskIDs(t, runsIn(t, outs[i]))
		if _, err := os.Stat(filepath.Join(s.dataDir, "mesos")); !os.IsNotExist(err) {
			t.Errorf("scheduler %d started an embedded master (data_dir/mesos: %v)", i, err)
		}
	}
	if n := len(ml.sandboxStdouts()); n < 4 {
		t.Errorf("mesos-local holds %d task sandboxes, want at least 4", n)
	}
}

// kill -9 of a scheduler while its task runs on mesos-local: the task
// keeps running (the framework's failover_timeout), the restarted scheduler
// takes it over with its stored framework id, and it ends once, never
// relaunched.
func TestSchedulerFailoverKeepsTasksOnMesosLocal(t *testing.T) {
	t.Parallel()
	ml := startMesosLocal(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
	opts := onMesos(ml)
	opts.dataDir = filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, opts)
	s1.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out := outDir(t)
	j := recorderJob("kept", "rec", out, 1)
	j.Failover = true
	j.Props = map[string]string{"script.command.line": "bin/gate.sh"}
	s1.registerJob(j)
	s1.triggerTaken("kept", func() bool { return starts(t, out) == 1 })
	eventually(t, waitLong, func() bool { return len(s1.running("kept")) == 1 }, "kept listed running")
	first := s1.running("kept")[0].TaskID
	s1.kill9()

	s2 := startScheduler(t, opts)
	eventually(t, waitLong, func() bool { rt := s2.running("kept"); return len(rt) == 1 && rt[0].TaskID == first },
		"the new scheduler to list %s running (running: %v)", first, late(func() any { return s2.running("kept") }))
	if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool { return s2.idle("kept") && len(events(t, out)) == 4 },
		"the task to end and the job to be idle (events: %v)", late(func() any { return events(t, out) }))
	runs := runsIn(t, out)
	if len(runs) != 1 || runs[0].TaskID != first {
		t.Fatalf("runs = %+v, want only %s (the task must survive the scheduler, not be relaunched)", runs, first)
	}
	if ev := events(t, out); ev[1] != first || ev[3] != first {
		t.Fatalf("events = %v, want start and end of %s", ev, first)
	}
	if failed := s2.failedTasks("kept"); len(failed) != 0 {
		t.Fatalf("the kept task was counted as failed: %v", failed)
	}
}

// kill -9 of mesos-local while a task runs: the task and its executor
// outlive it; the next mesos-local on the same work dir and port takes the
// executor over, the scheduler re-subscribes to it, finds the task running
// and keeps it: it ends once, on its own, never failed over.
func TestMesosLocalRestartKeepsTasks(t *testing.T) {
	t.Parallel()
	workDir, port := filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t)
	ml := startMesosLocal(t, workDir, port)
	s := startScheduler(t, onMesos(ml))
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	out := outDir(t)
	j := recorderJob("kept", "rec", out, 1)
	j.Failover = true
	j.Props = map[string]string{"script.command.line": "bin/gate.sh"}
	s.registerJob(j)
	s.triggerTaken("kept", func() bool { return starts(t, out) == 1 })
	eventually(t, waitLong, func() bool { return len(s.running("kept")) == 1 }, "kept listed running")
	first := s.running("kept")[0].TaskID
	ml.kill9()
	if n := len(harness.SandboxProcs(workDir)); n < 2 {
		t.Fatalf("%d processes outlived mesos-local, want its executor and the task", n)
	}

	startMesosLocal(t, workDir, port)
	if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool { return s.idle("kept") && len(events(t, out)) == 4 },
		"the task to end and the job to be idle (events: %v)", late(func() any { return events(t, out) }))
	runs := runsIn(t, out)
	if len(runs) != 1 || runs[0].TaskID != first {
		t.Fatalf("runs = %+v, want only %s (the task must survive mesos-local's restart, not be relaunched)", runs, first)
	}
	if ev := events(t, out); ev[1] != first || ev[3] != first {
		t.Fatalf("events = %v, want start and end of %s", ev, first)
	}
	if failed := s.failedTasks("kept"); len(failed) != 0 {
		t.Fatalf("the kept task was counted as failed: %v", failed)
	}
}
