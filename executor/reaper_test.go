package executor

import (
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupLeader starts `sh -c 'sleep 300 & wait'` in its own process group
// and returns the pids of the shell and its sleeping child.
func groupLeader(t *testing.T) (leader, child int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $! > "$0/child"; wait`, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	deadline := time.Now().Add(failsafe)
	for {
		b, _ := os.ReadFile(dir + "/child")
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return cmd.Process.Pid, pid
		}
		if time.Now().After(deadline) {
			t.Fatal("no child pid")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b[strings.LastIndexByte(string(b), ')'):]), ") Z ")
}

// TestReaperKillsGroupsLeftByADeadExecutor: at end of its input (the
// executor is gone) the reaper kills the groups still registered, and
// only those.
func TestReaperKillsGroupsLeftByADeadExecutor(t *testing.T) {
	r, err := StartReaper(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	left, leftChild := groupLeader(t)
	ended, endedChild := groupLeader(t)
	r.Add(left)
	r.Add(ended)
	r.Remove(ended) // this job ended normally: its group is not the reaper's business
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(failsafe)
	for running(leftChild) {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d of group %d survived the reaper", leftChild, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !running(endedChild) || !running(ended) {
		t.Fatal("the reaper killed a group that was removed")
	}
}
