package parallel

import (
	"sync/atomic"
	"testing"
)

// TestForRunsEachOnceWithinTheBound: every index runs exactly once and no
// more than max run at a time.
func TestForRunsEachOnceWithinTheBound(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100} {
		var running, peak atomic.Int64
		seen := make([]atomic.Int64, n)
		For(n, 4, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			seen[i].Add(1)
			running.Add(-1)
		})
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, seen[i].Load())
			}
		}
		if peak.Load() > 4 {
			t.Fatalf("n=%d: %d ran at once, bound 4", n, peak.Load())
		}
	}
}
