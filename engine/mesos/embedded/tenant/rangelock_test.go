package tenant

import (
	"strings"
	"testing"
)

// Two schedulers on a host cannot claim overlapping uid ranges; the error
// names a free one; a released claim frees its range.
func TestLockRangeRefusesOverlap(t *testing.T) {
	dir := t.TempDir()
	a := Range{Lo: 200000, Hi: 200099}
	release, err := LockRange(dir, a, "/data/a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockRange(dir, Range{Lo: 200050, Hi: 200149}, "/data/b")
	if err == nil || !strings.Contains(err.Error(), "overlaps 200000-200099") ||
		!strings.Contains(err.Error(), "set tenant_uid_range to a free range, e.g. 200150-200249") {
		t.Fatalf("overlap: %v", err)
	}
	releaseC, err := LockRange(dir, Range{Lo: 200100, Hi: 200199}, "/data/c")
	if err != nil {
		t.Fatalf("a disjoint range refused: %v", err)
	}
	defer releaseC()
	if _, err := LockRange(dir, Range{Lo: 300000, Hi: 300009}, "/data/a"); err == nil {
		t.Fatal("the same scheduler's data directory claimed twice")
	}
	release()
	releaseB, err := LockRange(dir, Range{Lo: 200000, Hi: 200099}, "/data/b")
	if err != nil {
		t.Fatalf("a released range still refused: %v", err)
	}
	releaseB()
}
