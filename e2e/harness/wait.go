package harness

import (
	"fmt"
	"net"
	"strings"
	"sync"
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

// handedOut are the ports FreePort and Listen gave this test binary: a
// port found free is closed again until its user binds it, and the
// kernel may hand it to the next listener on port 0 meanwhile (e2e/ha: a
// proxy bound the port picked a moment before for an etcd member's peers).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// listenNew listens on a loopback port this binary has not handed out
// before, and notes it.
func listenNew(t testing.TB) net.Listener {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	var held []net.Listener // refused ones stay bound until one is new
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return ln
		}
		held = append(held, ln)
	}
	t.Fatal("no loopback port not handed out before")
	return nil
}

// FreePort returns a TCP port free on 127.0.0.1 a moment ago, and never
// one it or Listen returned before in this test binary.
func FreePort(t testing.TB) int {
	t.Helper()
	ln := listenNew(t)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Listen listens on a free loopback port that FreePort has not handed
// out (to a process that may not have bound it yet).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	return listenNew(t)
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
