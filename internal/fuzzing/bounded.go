package fuzzing

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// HangLimit is how long one call under Bounded may take before the input
// counts as a hang.
const HangLimit = 10 * time.Second

// limit is HangLimit; tests of this package shorten it.
var limit = HangLimit

// Bounded runs fn and fails t when fn panics or does not return within
// HangLimit, quoting the panic's stack or every goroutine's stack. fn runs
// on another goroutine, so it must not call t.Fatal (return values through
// captured variables instead).
func Bounded(t testing.TB, what string, fn func()) {
	t.Helper()
	type outcome struct {
		panicked bool
		value    any
		stack    []byte
	}
	done := make(chan outcome, 1)
	go func() {
		o := outcome{panicked: true}
		defer func() {
			if o.panicked {
				o.value, o.stack = recover(), debug.Stack()
			}
			done <- o
		}()
		fn()
		o.panicked = false
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case o := <-done:
		if o.panicked {
			t.Fatalf("%s panicked: %v\n%s", what, o.value, o.stack)
		}
	case <-timer.C:
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not return within %v (a hang):\n%s", what, limit, buf)
	}
}
