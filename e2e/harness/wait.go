package harness

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
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

// FreePort returns a TCP port free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
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
