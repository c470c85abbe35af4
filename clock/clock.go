// Package clock injects time: Real for production, Fake for tests. Loops take
// a Clock and never call time.Now or time.Sleep directly, so tests drive them
// deterministically without sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the subset of *time.Timer the loops use.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration)
}

// Real is the system clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

// Fake is a manual clock: time moves only when Advance or Set is called,
// and timers fire synchronously inside those calls.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// Changed receives a value (non-blocking) whenever a timer is created
	// or reset, so tests can wait for a loop to arm its timer.
	Changed chan struct{}
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t, Changed: make(chan struct{}, 1)} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer makes a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), at: f.now.Add(d), active: true}
	f.timers = append(f.timers, t)
	t.fireIfDue(f.now)
	f.mu.Unlock()
	f.notify()
	return t
}

func (f *Fake) notify() {
	select {
	case f.Changed <- struct{}{}:
	default:
	}
}

// Advance moves time forward by d, firing due timers in order.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves time to t (never backwards), firing due timers in order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	f.now = t
	due := make([]*fakeTimer, 0)
	for _, tm := range f.timers {
		if tm.active && !tm.at.After(t) {
			due = append(due, tm)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, tm := range due {
		tm.active = false
		select {
		case tm.c <- t:
		default:
		}
	}
}

// Pending reports the earliest active timer's deadline.
func (f *Fake) Pending() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best time.Time
	ok := false
	for _, tm := range f.timers {
		if tm.active && (!ok || tm.at.Before(best)) {
			best, ok = tm.at, true
		}
	}
	return best, ok
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	t.at = t.f.now.Add(d)
	t.active = true
	select { // drop a stale fire, like time.Timer since Go 1.23
	case <-t.c:
	default:
	}
	t.fireIfDue(t.f.now)
	t.f.mu.Unlock()
	t.f.notify()
}

// fireIfDue fires a timer armed for now or the past at once, as a real
// timer would. Called with f.mu held.
func (t *fakeTimer) fireIfDue(now time.Time) {
	if t.active && !t.at.After(now) {
		t.active = false
		select {
		case t.c <- now:
		default:
		}
	}
}

// UnixNano is t in nanoseconds since 1970, 0 for the zero time: a time
// kept in 8 bytes where a structure is held per job or per entry.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNano is UnixNano's inverse (the zero time for 0).
func FromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
