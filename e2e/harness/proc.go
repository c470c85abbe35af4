package harness

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StopGrace is how long Stop waits after SIGTERM before it kills.
const StopGrace = 20 * time.Second

// Proc is one OS process a test started, its output in a log file.
type Proc struct {
	Name    string // how messages call it
	Cmd     *exec.Cmd
	LogPath string

	exited chan struct{} // closed when the process has been waited for
	mu     sync.Mutex
	died   time.Time // when it was seen dead (Kill9, Stop or exit)
	killed time.Time // when Kill9 sent SIGKILL (it could not act after)
}

// Start starts cmd with its stdout and stderr appended to logPath. The
// caller stops it (Stop, usually at cleanup).
func Start(t testing.TB, name, logPath string, cmd *exec.Cmd) *Proc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Name: name, Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
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

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Running reports whether the process has not been seen to exit.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// Kill9 sends SIGKILL and returns once the process is gone, with the
// instant it was seen gone (what it did ends before that). Idempotent.
func (p *Proc) Kill9() time.Time {
	if !p.Running() {
		return p.DiedAt()
	}
	p.mu.Lock()
	p.killed = time.Now()
	p.mu.Unlock()
	_ = p.Cmd.Process.Kill()
	<-p.exited
	return p.DiedAt()
}

// DiedAt is when the process was seen dead (zero while it runs).
func (p *Proc) DiedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.died
}

// KilledAt is when Kill9 sent SIGKILL (zero if it did not).
func (p *Proc) KilledAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// Stop ends the process with SIGTERM (after a SIGCONT, in case it was
// paused), SIGKILL after StopGrace, which fails t. Idempotent.
func (p *Proc) Stop(t testing.TB) {
	if !p.Running() {
		return
	}
	_ = p.Signal(syscall.SIGCONT)
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(StopGrace):
		t.Errorf("%s did not stop within %v of SIGTERM; killing it", p.Name, StopGrace)
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
}

// Log is what the process wrote so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// AwaitReady is Eventually for a process starting up: it fails the test at
// once, with the process's log, if the process exits before ready holds.
func (p *Proc) AwaitReady(t testing.TB, timeout, every time.Duration, ready func() bool, what string, args ...any) {
	t.Helper()
	Eventually(t, timeout, every, func() bool {
		if !p.Running() {
			t.Fatalf("%s exited during start-up: %v\n%s", p.Name, p.Cmd.ProcessState, p.Log())
		}
		return ready()
	}, what, args...)
}
