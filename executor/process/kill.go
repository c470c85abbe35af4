package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// pollInterval is how often a killed group is checked for survivors.
const pollInterval = 10 * time.Millisecond

// killGroup sends SIGTERM to the group led by pid, waits for the leader (done)
// and any other members until grace ends, then sends SIGKILL to what is left
// and waits (briefly) until the group is really gone.
func killGroup(pid int, grace time.Duration, done <-chan error) {
	deadline := time.Now().Add(grace)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
		// The leader is gone; grandchildren may still be in its group.
		waitGroup(pid, deadline)
	case <-timer.C:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	if groupAlive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	waitGroup(pid, time.Now().Add(time.Second)) // SIGKILL is delivered asynchronously
}

// waitGroup polls until the group is empty or the deadline passes.
func waitGroup(pgid int, deadline time.Time) {
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
	}
}

// groupAlive reports whether any non-zombie process is in group pgid. It
// reads /proc (Linux); elsewhere it asks kill(2), which counts zombies.
func groupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) == nil
	}
	want := []byte(strconv.Itoa(pgid))
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) >= 3 && string(f[0]) != "Z" && bytes.Equal(f[2], want) {
			return true
		}
	}
	return false
}

// SignalName is the conventional name of a signal, e.g. "SIGSEGV".
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}
