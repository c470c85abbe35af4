package embedded

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// groupLeader starts a process leading a process group of its own, as an
// executor does, killed when the test ends.
func groupLeader(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// takePid starts a group leader with pid, free (through ns_last_pid), or
// skips the test when the machine's other processes keep taking it.
func takePid(t *testing.T, pid int) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to choose the next pid (ns_last_pid)")
	}
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		c := groupLeader(t)
		if c.Process.Pid == pid {
			return c
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	t.Skip("the pid was not reused in 200 tries")
	return nil
}

// endedBy sends SIGTERM to cmd and returns the signal that ended it: a
// SIGKILL sent before shows as SIGKILL.
func endedBy(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws.Signal()
}

// TestHostileGroupSignalMissesAReusedPid: an executor's process group is
// signalled by its pid, which, once the executor has exited and been
// reaped, any process may take, leading a group of that id (another
// team's executor). The agent signals no such group: not for an executor
// it reaped, nor for a recovered one (another process's child) whose pid
// names a process started at another time than the checkpointed one.
func TestHostileGroupSignalMissesAReusedPid(t *testing.T) {
	a := groupLeader(t)
	pid := a.Process.Pid
	start, _ := procStart(pid)
	ran := &executor{pid: pid}
	recovered := &executor{pid: pid, persisted: persisted{recovered: true, proc: forked{Pid: pid, Start: start, Boot: bootID()}}}
	_ = a.Process.Kill()
	_ = a.Wait()
	ran.exited = true // as runExecutor marks it before reaping it

	b := takePid(t, pid)
	ran.signalGroup(syscall.SIGKILL)
	if bStart, _ := procStart(pid); bStart != start {
		recovered.signalGroup(syscall.SIGKILL)
	}
	if sig := endedBy(t, b); sig != syscall.SIGTERM {
		t.Fatalf("the process that took an exited executor's pid ended by %v: the agent signalled its group", sig)
	}
}

// TestGroupSignalReachesALiveExecutor: the checks above leave a live
// executor's group, recovered or not, signalled.
func TestGroupSignalReachesALiveExecutor(t *testing.T) {
	for _, recovered := range []bool{false, true} {
		a := groupLeader(t)
		e := &executor{pid: a.Process.Pid}
		if recovered {
			start, _ := procStart(e.pid)
			e.persisted = persisted{recovered: true, proc: forked{Pid: e.pid, Start: start, Boot: bootID()}}
		}
		e.signalGroup(syscall.SIGKILL)
		if sig := endedBy(t, a); sig != syscall.SIGKILL {
			t.Fatalf("recovered %v: a live executor's group ended by %v, want SIGKILL", recovered, sig)
		}
	}
}
