package estimate

import (
	"testing"
	"time"
)

// The namespace holding the smaller share goes next; an entry that waits
// for room holds the pool (none passes it); what nothing frees is not known.
func TestStartsShared(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	total := Res{CPUs: 4, MemMB: 1000}
	groups := []Group{
		{Running: []Holding{{Holds: Res{CPUs: 2}, End: t0.Add(time.Minute)}},
			Waiting: []Entry{{Needs: Res{CPUs: 2}, Run: time.Minute}, {Needs: Res{CPUs: 2}, Run: time.Minute}}},
		{Waiting: []Entry{{Needs: Res{CPUs: 1}, Run: 3 * time.Minute}, {Needs: Res{CPUs: 8}, Run: time.Minute}}},
	}
	got := StartsShared(t0, Res{CPUs: 2, MemMB: 1000}, total, groups)
	// group 1 (share 0) takes 1 CPU now; then it still holds the smaller
	// share (1/4 < 1/2) and its 8 CPUs wait; at 1 min group 0's running
	// work ends, its share drops to 0 and it goes first (the shares are
	// taken again as work ends); the 8 CPUs never fit: not known.
	if !got[1][0].Equal(t0) || !got[0][0].Equal(t0.Add(time.Minute)) || !got[0][1].Equal(t0.Add(2*time.Minute)) || !got[1][1].IsZero() {
		t.Errorf("starts: %v", got)
	}
	groups[1].Waiting = groups[1].Waiting[:1]
	got = StartsShared(t0, Res{CPUs: 2, MemMB: 1000}, total, groups)
	// group 1 takes 1 CPU now (share 1/4 < 1/2); group 0 needs 2 with 1
	// free: at 1 min its running work ends; the second at 2 min.
	if !got[1][0].Equal(t0) || !got[0][0].Equal(t0.Add(time.Minute)) || !got[0][1].Equal(t0.Add(2*time.Minute)) {
		t.Errorf("starts: %v", got)
	}
	// a weight of 4 puts group 0 first: its share 1/2 ÷ 4 < group 1's 1/4
	groups[0].Weight, groups[1].Running = 4, []Holding{{Holds: Res{CPUs: 1}}}
	got = StartsShared(t0, Res{CPUs: 2, MemMB: 1000}, total, groups)
	if !got[0][0].Equal(t0) {
		t.Errorf("weighted: %v", got)
	}
}

// A DAEMON shard's replacement frees its old task as it starts: the pool
// gets it back then, so the move holds its shard once and the work behind
// it starts (without it, never: nothing else would free the pool).
func TestStartsSharedMoveFreesItsOldTask(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	total := Res{CPUs: 2, MemMB: 1000}
	groups := []Group{
		{Running: []Holding{{Holds: Res{CPUs: 1}}}, // the old task: it ends only as its replacement runs
			Waiting: []Entry{{Needs: Res{CPUs: 1}, Frees: Res{CPUs: 1}}, {Needs: Res{CPUs: 1}, Run: time.Minute}}},
		{Waiting: []Entry{{Needs: Res{CPUs: 1}, Run: time.Minute}}},
	}
	got := StartsShared(t0, Res{CPUs: 1, MemMB: 1000}, total, groups)
	// group 1 (share 0) takes the free CPU now; at 1 min it is back, the
	// replacement takes it and gives the old task's back at once, and the
	// entry behind it starts then too.
	if !got[1][0].Equal(t0) || !got[0][0].Equal(t0.Add(time.Minute)) || !got[0][1].Equal(t0.Add(time.Minute)) {
		t.Errorf("starts: %v", got)
	}
}
