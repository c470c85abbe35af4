package ha

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds on waiting for real processes on a busy 2-core machine. Nothing
// asserts on how long anything took; these only end a stuck test.
const (
	waitLong  = 60 * time.Second
	pollEvery = 50 * time.Millisecond
	stopGrace = 20 * time.Second
)

// eventually polls cond until it holds; the test fails with what was
// awaited if it does not within timeout.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for: %s", timeout, fmt.Sprintf(what, args...))
	}
}

// poll is eventually without failing: it reports whether cond held in time.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// sleepUntil sleeps until the instant at (fault injection is timed against
// the cron fires planned in advance; it waits for no condition).
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
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

// proc is one OS process with its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	mu      sync.Mutex
	died    time.Time // when it was seen dead (kill9, stop or exit)
	killed  time.Time // when kill9 sent SIGKILL (it could not act after)
}

func startProc(t testing.TB, name, logPath, bin string, args ...string) *proc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, logPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		p.mu.Lock()
		if p.died.IsZero() {
			p.died = time.Now()
		}
		p.mu.Unlock()
		close(p.exited)
	}()
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill9 sends SIGKILL and returns once the process is gone, with the
// instant it was seen gone (what it did ends before that).
func (p *proc) kill9() time.Time {
	p.mu.Lock()
	p.killed = time.Now()
	p.mu.Unlock()
	_ = p.cmd.Process.Kill()
	<-p.exited
	return p.diedAt()
}

func (p *proc) diedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.died
}

func (p *proc) killedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// stop ends the process with SIGTERM, SIGKILL after stopGrace. Idempotent.
func (p *proc) stop(t testing.TB) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		t.Errorf("%s did not stop within %v of SIGTERM; killing it", p.name, stopGrace)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// mesosLocal is one bin/mesos-local process.
type mesosLocal struct {
	*proc
	url string
}

var mesosLocalURL = regexp.MustCompile(`(?m)^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// startMesosLocal starts bin/mesos-local in dir and stops it at cleanup
// (which also ends every executor it runs).
func startMesosLocal(t testing.TB, dir string) *mesosLocal {
	t.Helper()
	port := freePort(t)
	m := &mesosLocal{proc: startProc(t, "mesos-local", filepath.Join(dir, "mesos-local.log"),
		filepath.Join(binDir, "mesos-local"), "--port", strconv.Itoa(port), "--work-dir", filepath.Join(dir, "mesos"),
		"--cpus", "4", "--mem-mb", "8192")}
	t.Cleanup(func() {
		m.stop(t)
		if t.Failed() {
			t.Logf("mesos-local log (%s):\n%s", m.logPath, tail(m.log(), 60))
		}
	})
	eventually(t, waitLong, func() bool {
		if !m.running() {
			t.Fatalf("mesos-local exited during start-up:\n%s", m.log())
		}
		if sm := mesosLocalURL.FindStringSubmatch(m.log()); sm != nil {
			m.url = sm[1]
		}
		return m.url != ""
	}, "mesos-local to print its URL")
	return m
}

// ensemble is a 3-server ZooKeeper ensemble of a test's own
// (scripts/services.sh), for tests that stop servers.
type ensemble struct {
	t       testing.TB
	dir     string
	servers string // the connect string of all three
}

// ensembleScriptBound bounds one services.sh call (a JVM start on a busy
// machine).
const ensembleScriptBound = 2 * time.Minute

func startEnsemble(t testing.TB) *ensemble {
	t.Helper()
	for _, b := range []string{"java", "bash"} {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: run scripts/services.sh install", b)
			}
			t.Skipf("%s is missing; run scripts/services.sh install", b)
		}
	}
	e := &ensemble{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		if err := e.script("stop-ensemble"); err != nil {
			t.Errorf("stop the ensemble: %v", err)
		}
	})
	if err := e.script("start-ensemble"); err != nil {
		t.Fatalf("start a ZooKeeper ensemble: %v", err)
	}
	env, err := os.ReadFile(filepath.Join(e.dir, "ensemble.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`EJ_TEST_ZK_ENSEMBLE=(\S+)`).FindSubmatch(env)
	if m == nil {
		t.Fatalf("no EJ_TEST_ZK_ENSEMBLE in %s:\n%s", e.dir, env)
	}
	e.servers = string(m[1])
	return e
}

// script runs services.sh CMD DIR [N].
func (e *ensemble) script(cmd string, n ...int) error {
	ctx, cancel := context.WithTimeout(context.Background(), ensembleScriptBound)
	defer cancel()
	args := []string{servicesScript, cmd, e.dir}
	for _, v := range n {
		args = append(args, strconv.Itoa(v))
	}
	out, err := exec.CommandContext(ctx, "bash", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("services.sh %s: %v\n%s", strings.Join(args[1:], " "), err, out)
	}
	return nil
}

func (e *ensemble) stopNode(n int) {
	e.t.Helper()
	if err := e.script("stop-zk-node", n); err != nil {
		e.t.Fatal(err)
	}
}

func (e *ensemble) startNode(n int) {
	e.t.Helper()
	if err := e.script("start-zk-node", n); err != nil {
		e.t.Fatal(err)
	}
}
