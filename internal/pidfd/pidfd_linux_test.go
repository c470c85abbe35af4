package pidfd

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

func start(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// endedBy waits for cmd and returns the signal that ended it.
func endedBy(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	_ = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("%d ended %v, not by a signal", cmd.Process.Pid, cmd.ProcessState)
	}
	return ws.Signal()
}

func TestSignalReachesThePinnedProcess(t *testing.T) {
	if !Supported() {
		t.Skip("no pidfd on this kernel")
	}
	cmd := start(t)
	p, err := Open(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if sig := endedBy(t, cmd); sig != syscall.SIGKILL {
		t.Fatalf("ended by %v", sig)
	}
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("signal to a pinned process that has exited: %v, want ESRCH", err)
	}
	if _, err := Open(cmd.Process.Pid); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pinning a pid no process holds: %v, want ESRCH", err)
	}
}

// TestSignalMissesAReusedPid: a pinned process exits and another takes its
// pid (made to, through ns_last_pid); the signal sent through the pin
// reaches nothing, and the new holder of the pid ends only by the signal
// the test sends it afterwards.
func TestSignalMissesAReusedPid(t *testing.T) {
	if !Supported() {
		t.Skip("no pidfd on this kernel")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to choose the next pid (ns_last_pid)")
	}
	a := start(t)
	pid := a.Process.Pid
	p, err := Open(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_ = a.Process.Kill()
	_ = a.Wait() // reaped: its pid is free

	// Other processes of the machine may take the pid first: try again.
	var b *exec.Cmd
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		c := start(t)
		if c.Process.Pid == pid {
			b = c
			break
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if b == nil {
		t.Skip("the pid was not reused in 200 tries")
	}
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("signal through the pin of an exited process: %v, want ESRCH", err)
	}
	_ = b.Process.Signal(syscall.SIGTERM)
	if sig := endedBy(t, b); sig != syscall.SIGTERM {
		t.Fatalf("the process that took the pid ended by %v: the pin's signal reached it", sig)
	}
}
