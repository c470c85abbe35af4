package offers

import (
	"math"
	"testing"
)

func TestCPUs(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want Milli
	}{
		{0, 0}, {0.1, 100}, {0.2, 200}, {0.3, 300}, {1, 1000}, {0.0004, 0}, {0.0005, 1},
		{0.1 + 0.2, 300}, {2.9999999, 3000}, {-1, 0}, {math.NaN(), 0}, {math.Inf(1), math.MaxInt64},
		{1e300, math.MaxInt64},
	} {
		if got := CPUs(tc.in); got != tc.want {
			t.Errorf("CPUs(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestMemMB(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want int64
	}{
		{0, 0}, {1, 1}, {0.5, 1}, {64.2, 65}, {128, 128}, {0.1 * 640, 64}, {-3, 0},
		{math.NaN(), 0}, {math.Inf(1), math.MaxInt64},
	} {
		if got := MemMB(tc.in); got != tc.want {
			t.Errorf("MemMB(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestFixedPointSumFits(t *testing.T) {
	sum := Resources{CPU: CPUs(0.1), MemMB: MemMB(1)}.Add(Resources{CPU: CPUs(0.2), MemMB: MemMB(2)})
	if capacity := (Resources{CPU: CPUs(0.3), MemMB: 3}); !sum.Fits(capacity) {
		t.Fatalf("%s does not fit %s", sum, capacity)
	}
	a, b := 0.1, 0.2 // variables: Go constant arithmetic would be exact
	if a+b <= 0.3 {
		t.Fatal("float64 sanity: 0.1+0.2 is expected to exceed 0.3")
	}
	if CPUs(a)+CPUs(b) != CPUs(a+b) || !(Resources{CPU: CPUs(a) + CPUs(b)}).Fits(Resources{CPU: CPUs(0.3)}) {
		t.Fatal("fixed-point 0.1+0.2 must equal and fit 0.3")
	}
}

func TestResourcesArithmetic(t *testing.T) {
	a := Resources{CPU: 1500, MemMB: 256}
	b := Resources{CPU: 500, MemMB: 64}
	if got := a.Sub(b); got != (Resources{1000, 192}) {
		t.Errorf("Sub = %v", got)
	}
	if got := a.Sub(b).Add(b); got != a {
		t.Errorf("Add(Sub) = %v", got)
	}
	if !b.Fits(a) || a.Fits(b) || !a.Fits(a) {
		t.Error("Fits is wrong")
	}
	if (Resources{CPU: 1, MemMB: 0}).Fits(Resources{CPU: 0, MemMB: 100}) {
		t.Error("cpu must be checked")
	}
	if !(Resources{}).IsZero() || a.IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Resources{CPU: CPUs(0.1), MemMB: 64}.String(), "cpus=0.100 mem=64MB"},
		{Resources{CPU: 12345, MemMB: 0}.String(), "cpus=12.345 mem=0MB"},
		{Milli(-1500).String(), "-1.500"},
		{Milli(math.MinInt64).String(), "-9223372036854775.808"},
		{Ready.String(), "READY"},
		{Failover.String(), "FAILOVER"},
		{Kind(7).String(), "Kind(7)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if CPUs(1.25).Cores() != 1.25 {
		t.Error("Cores")
	}
}
