package fuzzing

import (
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	if len(args) > 0 {
		r.msg = args[0].(string)
	}
}

func TestBoundedReturns(t *testing.T) {
	r := &recorder{TB: t}
	ran := false
	Bounded(r, "work", func() { ran = true })
	if !ran || r.msg != "" {
		t.Fatalf("ran=%v failure=%q", ran, r.msg)
	}
}

func TestBoundedReportsPanic(t *testing.T) {
	r := &recorder{TB: t}
	Bounded(r, "work", func() { panic("boom") })
	if r.msg != "work" {
		t.Fatalf("failure = %q, want the panic reported for %q", r.msg, "work")
	}
}

func TestBoundedPanicNil(t *testing.T) {
	r := &recorder{TB: t}
	Bounded(r, "nilpanic", func() { panic(nil) }) // a *runtime.PanicNilError since Go 1.21
	if !strings.Contains(r.msg, "nilpanic") {
		t.Fatalf("failure = %q", r.msg)
	}
}

func TestBoundedReportsHang(t *testing.T) {
	defer func(old time.Duration) { limit = old }(limit)
	limit = time.Millisecond
	release := make(chan struct{})
	defer close(release)
	r := &recorder{TB: t}
	Bounded(r, "stuck", func() { <-release }) // blocks until the test ends: never within the limit
	if r.msg != "stuck" {
		t.Fatalf("failure = %q, want the hang reported for %q", r.msg, "stuck")
	}
}
