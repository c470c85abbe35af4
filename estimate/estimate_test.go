package estimate

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func TestQuantileNearestRank(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.9, 0},
		{secs(7), 0.9, 7 * time.Second},
		{secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9 * time.Second}, // 0.9×10 = 9 exactly: the 9th
		{secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0.9, 10 * time.Second},
		{secs(1, 2, 3, 4), 0.5, 2 * time.Second},
		{secs(1, 2, 3, 4, 5), 0.5, 3 * time.Second},
		{secs(1, 2, 3), 1, 3 * time.Second},
	} {
		if got := Quantile(c.in, c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.in, c.q, got, c.want)
		}
	}
}

// P90 is at least 90% of the values and exceeds fewer than 10% + 1 of
// them, whatever their order.
func TestP90Property(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(60)
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(r.IntN(1000)) * time.Millisecond
		}
		p := P90(ds)
		if !slices.Contains(ds, p) {
			t.Fatalf("P90 %v is none of %v", p, ds)
		}
		atMost, below := 0, 0
		for _, d := range ds {
			if d <= p {
				atMost++
			}
			if d < p {
				below++
			}
		}
		if float64(atMost) < 0.9*float64(n) || float64(below) >= 0.9*float64(n) {
			t.Fatalf("P90 %v of %d values: %d at most it, %d below", p, n, atMost, below)
		}
	}
}

func TestOf(t *testing.T) {
	ty := Of(secs(8, 5, 9, 6, 7, -1))
	if !ty.Known || ty.Runs != 6 || ty.P90 != 9*time.Second || ty.Median != 6*time.Second || ty.Max != 9*time.Second || ty.Latest != 8*time.Second {
		t.Errorf("Of = %+v", ty)
	}
	if ty := Of(secs(4, 4)); ty.Known || ty.P90 != 4*time.Second {
		t.Errorf("two runs: %+v (not known)", ty)
	}
	many := make([]time.Duration, 0, 80)
	for i := range 80 {
		many = append(many, time.Duration(i)*time.Second) // the most recent first: 0 s, 1 s, …
	}
	if ty := Of(many); ty.Runs != MaxRuns || ty.Max != (MaxRuns-1)*time.Second {
		t.Errorf("80 runs: %+v, want the %d most recent", ty, MaxRuns)
	}
	if ty := Of(nil); ty.Known || ty.Runs != 0 {
		t.Errorf("no runs: %+v", ty)
	}
}

func TestEnd(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	known := Of(secs(8, 8, 8))
	for _, c := range []struct {
		name    string
		typical Typical
		timeout time.Duration
		want    time.Duration
		basis   Basis
	}{
		{"p90", known, 0, 8 * time.Second, BasisP90},
		{"p90 within the timeout", known, time.Minute, 8 * time.Second, BasisP90},
		{"the timeout ends it first", known, 5 * time.Second, 5 * time.Second, BasisTimeout},
		{"too few runs: the timeout", Of(secs(8)), time.Minute, time.Minute, BasisTimeout},
		{"nothing known", Of(nil), 0, 0, BasisNone},
	} {
		end, basis := End(start, c.typical, c.timeout)
		if basis != c.basis || (basis != BasisNone && end.Sub(start) != c.want) || (basis == BasisNone && !end.IsZero()) {
			t.Errorf("%s: End = %v %q, want +%v %q", c.name, end, basis, c.want, c.basis)
		}
	}
}

func TestTypicalJSONInMilliseconds(t *testing.T) {
	b, err := json.Marshal(Of(secs(8, 5, 9)))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"runs":3,"medianMs":8000,"p90Ms":9000,"maxMs":9000,"known":true,"latestMs":8000}`; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
}
