package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SandboxProcs lists the processes running in the sandboxes under dir (an
// embedded agent's work directory): executors and their tasks, whose
// MESOS_DIRECTORY names their sandbox. Zombies do not count.
func SandboxProcs(dir string) []int {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !running(pid) {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("MESOS_DIRECTORY=")); ok && strings.HasPrefix(string(v), abs+"/") {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// KillSandboxProcs SIGKILLs what SandboxProcs lists and returns their pids.
func KillSandboxProcs(dir string) []int {
	pids := SandboxProcs(dir)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return pids
}

// CleanupBound bounds a --recover=cleanup run: each executor gets its
// shutdown grace period and a few seconds more.
const CleanupBound = time.Minute

// StopEverything ends what a stopped embedded agent left running on its
// work directory workDir, as an operator does: it runs the agent's binary
// with --recover=cleanup (args: the binary and its flags, the same settings
// as the run it cleans up after), which shuts down every executor and its
// tasks and exits. It fails t when that fails or leaves a process behind
// (which it then kills, so that no test leaks processes).
func StopEverything(t testing.TB, workDir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CleanupBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], append(args[1:], "--recover=cleanup")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s --recover=cleanup: %v\n%s", filepath.Base(args[0]), err, Tail(string(out), 40))
	}
	if left := KillSandboxProcs(workDir); len(left) > 0 {
		t.Errorf("processes %v survived %s --recover=cleanup in %s (killed now)", left, filepath.Base(args[0]), workDir)
	}
}

// GroupAndSession are the process group and session of pid; ok is false
// when it is gone. A session (or group) whose leader is outside this PID
// namespace reads as 0.
func GroupAndSession(pid int) (pgrp, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state, ppid, pgrp, session, …
	if len(f) < 4 {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return pgrp, sid, true
}
