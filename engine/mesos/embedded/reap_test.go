//go:build linux

package embedded

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReapKillsProcessesOfDeadSandboxes(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "slaves", "S0", "runs", "c1")
	start := func(sandbox string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = append(os.Environ(), "MESOS_DIRECTORY="+sandbox)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a task's own group, as executors do
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	orphan := start(dir)
	bystander := start(filepath.Join(t.TempDir(), "elsewhere"))
	if n := reap(filepath.Join(work, "slaves"), true, nil); n != 1 {
		t.Fatalf("reaped %d processes, want 1", n)
	}
	if err := orphan.Wait(); err == nil {
		t.Fatal("the orphan exited normally: not killed")
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a process of another sandbox was killed: %v", err)
	}
	if n := reap(dir, false, nil); n != 0 {
		t.Fatalf("reaped %d again", n)
	}
}
