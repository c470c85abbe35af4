//go:build e2e

package ha

import (
	"testing"
	"time"
)

// TestTermLapsedEndsAtItsLease: a term ended by its lease ends, for the
// one-leader check, when its lease ran out, not when its end was logged.
func TestTermLapsedEndsAtItsLease(t *testing.T) {
	log := `time=2026-11-29T03:40:37.057Z level=INFO msg=leading term=3
time=2026-11-29T03:40:58.067Z level=WARN msg="no longer leading" term=3 cause="election: leadership not confirmed in time: last confirmed 692ms ago (lease 666.666666ms)"
time=2026-11-29T03:41:00.000Z level=INFO msg=leading term=5
time=2026-11-29T03:41:01.500Z level=WARN msg="no longer leading" term=5 cause="election: ZooKeeper connection suspended"
`
	ts := parseTerms(log)
	if len(ts) != 2 {
		t.Fatalf("terms %v, want 2", ts)
	}
	want := time.Date(2026, 11, 29, 3, 40, 58, 41_666_666, time.UTC)
	if !ts[0].end.Equal(want) {
		t.Errorf("lapsed term ends %s, want its lease's end %s", ts[0].end.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	if want := time.Date(2026, 11, 29, 3, 41, 1, 500_000_000, time.UTC); !ts[1].end.Equal(want) {
		t.Errorf("suspended term ends %s, want when it was logged %s", ts[1].end.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}
