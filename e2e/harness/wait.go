package harness

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// Poll calls cond every `every` until it holds or timeout has passed, and
// reports whether it held. It waits on real processes; nothing may assert on
// how long it took.
func Poll(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}

// Eventually is Poll that fails the test with what was awaited (what
// formatted with args) when cond does not hold within timeout.
func Eventually(t testing.TB, timeout, every time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	if !Poll(timeout, every, cond) {
		t.Fatalf("timed out after %v waiting for: %s", timeout, fmt.Sprintf(what, args...))
	}
}

// FreePort returns a TCP port free on 127.0.0.1 a moment ago, and never
// one it or Listen returned before in this test binary (internal/loopback).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := loopback.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Listen listens on a free loopback port that FreePort has not handed
// out (to a process that may not have bound it yet).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := loopback.Listen()
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Tail returns the last lines of s (a log printed when a test failed); a
// final newline does not count as an empty line.
func Tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
