package guard

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the guardian (Start re-executes it).
func TestMain(m *testing.M) {
	if Main(os.Args[1:]) {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func group(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

func exited(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // failure bound only
		t.Fatal("the group was not killed")
	}
	deadline := time.Now().Add(30 * time.Second) // failure bound only
	for liveMembers(cmd.Process.Pid) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("members of the group survive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// liveMembers counts the processes of group pgid that are not zombies
// (an orphaned zombie waits for init to reap it, and is dead already).
func liveMembers(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

func TestGuardianKillsWatchedGroupsWhenTheExecutorGoes(t *testing.T) {
	watched, forgotten := group(t), group(t)
	r, w := io.Pipe()
	ran := make(chan struct{})
	go func() { Run(r, io.Discard, os.Getppid()); close(ran) }()
	io.WriteString(w, "+"+itoa(watched.Process.Pid)+"\n+"+itoa(forgotten.Process.Pid)+"\n-"+itoa(forgotten.Process.Pid)+"\n")
	w.Close() // the executor exits
	<-ran
	exited(t, watched)
	if liveMembers(forgotten.Process.Pid) == 0 {
		t.Fatal("a forgotten group was killed")
	}
}

func TestGuardianProcessOutlivesAKilledExecutor(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(self)
	if err != nil {
		t.Fatal(err)
	}
	task := group(t)
	g.Watch(task.Process.Pid)
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil { // what the parent-death signal delivers
		t.Fatal(err)
	}
	exited(t, task)
}

func itoa(n int) string { return strconv.Itoa(n) }
