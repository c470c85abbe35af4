package scheduler

import (
	"testing"
	"time"
)

// TestRefuseBefore: a decline filter never outlasts the next instant work
// may launch at (the producer's soonest fire, or a waiting entry's), so a
// fire under another team's backlog is not held back by what an earlier
// round declined (issue 52); without either it is the filter asked for.
func TestRefuseBefore(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		name         string
		fire, wakeAt time.Time
		noFire       bool
		refuse, want time.Duration
	}{
		{name: "nothing due", noFire: true, refuse: time.Second, want: time.Second},
		{name: "a fire after the filter", fire: at(3 * time.Second), refuse: time.Second, want: time.Second},
		{name: "a fire within it", fire: at(300 * time.Millisecond), refuse: time.Second, want: 300 * time.Millisecond},
		{name: "a staged entry within it", noFire: true, wakeAt: at(200 * time.Millisecond), refuse: time.Second, want: 200 * time.Millisecond},
		{name: "the sooner of both", fire: at(400 * time.Millisecond), wakeAt: at(250 * time.Millisecond), refuse: 5 * time.Second, want: 250 * time.Millisecond},
		{name: "a past wake and a fire", fire: at(700 * time.Millisecond), wakeAt: at(-time.Second), refuse: time.Second, want: 700 * time.Millisecond},
		{name: "a fire now", fire: now, refuse: time.Second, want: time.Second},
		{name: "a fire a moment away", fire: at(time.Microsecond), refuse: time.Second, want: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &launcher{nextFireAt: func() (time.Time, bool) { return tc.fire, !tc.noFire }}
			if got := l.refuseBefore(now, tc.wakeAt, tc.refuse); got != tc.want {
				t.Errorf("refuseBefore = %s, want %s", got, tc.want)
			}
		})
	}
}
