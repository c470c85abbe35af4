package cron

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHashFields(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		check func(s *Schedule) bool
	}{
		{"0 H * * * ?", func(s *Schedule) bool { return bitsCount(s.min) == 1 }},
		{"0 H(0-29) * * * ?", func(s *Schedule) bool { return bitsCount(s.min) == 1 && s.min < 1<<30 }},
		{"0 H/15 * * * ?", func(s *Schedule) bool { return bitsCount(s.min) == 4 && s.min&^(s.min-1) < 1<<15 }},
		{"0 H(10-40)/10 * * * ?", func(s *Schedule) bool { return bitsCount(s.min) >= 3 && s.min < 1<<41 && s.min&(1<<10-1) == 0 }},
		{"0 0 0 H * ?", func(s *Schedule) bool { return bitsCount(s.dom) == 1 && s.dom < 1<<29 }},
		{"H H H ? * H", func(s *Schedule) bool { return bitsCount(uint64(s.dow)) == 1 && s.dayMode == dayDow }},
	} {
		s, err := ParseFor(tc.expr, "nightly-report")
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if !s.Hashed() || !tc.check(s) {
			t.Errorf("%s: fields sec=%x min=%x dom=%x dow=%x", tc.expr, s.sec, s.min, s.dom, s.dow)
		}
		again, _ := ParseFor(tc.expr, "nightly-report")
		if *again != *s {
			t.Errorf("%s: two parses for one key differ", tc.expr)
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{"0 H * * * ? H", "year"},
		{"0 H(0-29 * * * ?", "unclosed"},
		{"0 H(30-10) * * * ?", "backwards"},
		{"0 H/0 * * * ?", "step"},
		{"0 H/61 * * * ?", "out of range"},
		{"0 H(0-70) * * * ?", "out of range"},
		{"0 Hx * * * ?", "invalid H item"},
	} {
		_, err := ParseFor(tc.expr, "k")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.expr, err, tc.want)
		}
	}
	if s, _ := Parse("0 0 * * * ?"); s.Hashed() {
		t.Error("a plain expression says it is hashed")
	}
}

func bitsCount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// H spreads keys over the field: 1,000 names on "0 H * * * ?" fill every
// minute and none holds more than twice its share.
func TestHashSpread(t *testing.T) {
	var perMinute [60]int
	for i := range 1000 {
		s, _ := ParseFor("0 H * * * ?", fmt.Sprintf("job-%d", i))
		perMinute[nextBit(s.min, 0)]++
	}
	for m, n := range perMinute {
		if n == 0 || n > 2*1000/60 {
			t.Errorf("minute %d holds %d of 1000", m, n)
		}
	}
}

func TestPlanUnionAndJitter(t *testing.T) {
	a, _ := Parse("0 0 9 * * ?")
	b, _ := Parse("0 30 9,12 * * ?")
	dup, _ := Parse("0 0 9 * * ?")
	p := &Plan{Crons: []*Schedule{a, b, dup}}
	from := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	got := p.NextN(from, time.UTC, 4)
	want := []string{"09:00", "09:30", "12:30", "09:00"}
	for i, w := range want {
		if got[i].Format("15:04") != w {
			t.Fatalf("union fires %v, want %v (one fire per instant)", got, want)
		}
	}
	off := Offset("nightly-report", time.Hour)
	if off < 0 || off >= time.Hour || off%time.Second != 0 || off != Offset("nightly-report", time.Hour) {
		t.Fatalf("offset %s", off)
	}
	j := &Plan{Crons: []*Schedule{a}, Offset: off}
	first := j.Next(from, time.UTC)
	if !first.Equal(from.Add(9*time.Hour + off)) {
		t.Fatalf("jittered fire %s, want 09:00 + %s", first, off)
	}
	// Next from inside the window (after the nominal instant, before the
	// jittered one) still gives the jittered fire, not the next day's.
	if n := j.Next(from.Add(9*time.Hour), time.UTC); !n.Equal(first) {
		t.Fatalf("Next from 09:00 = %s, want %s", n, first)
	}
	if n := j.Next(first, time.UTC); !n.Equal(first.AddDate(0, 0, 1)) {
		t.Fatalf("after the fire: %s", n)
	}
	fires, capped := j.Between(from, from.AddDate(0, 0, 10), time.UTC, 5)
	if len(fires) != 5 || !capped {
		t.Fatalf("Between: %v %v", fires, capped)
	}
	if Offset("x", 0) != 0 || Offset("x", 500*time.Millisecond) != 0 {
		t.Fatal("an empty window gives an offset")
	}
}

// BenchmarkJitterSpread reports how 1,000 jobs on "0 0 * * * ?" with a
// one-hour jitter spread over the hour: the fullest minute against its
// share (1000/60 ≈ 16.7).
func BenchmarkJitterSpread(b *testing.B) {
	s, _ := Parse("0 0 * * * ?")
	from := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var perMinute [60]int
	for range b.N {
		perMinute = [60]int{}
		for i := range 1000 {
			p := Plan{Crons: []*Schedule{s}, Offset: Offset(fmt.Sprintf("report-%04d", i), time.Hour)}
			perMinute[p.Next(from, time.UTC).Minute()]++
		}
	}
	lo, hi := 1000, 0
	for _, n := range perMinute {
		lo, hi = min(lo, n), max(hi, n)
	}
	b.ReportMetric(float64(hi), "max/minute")
	b.ReportMetric(float64(lo), "min/minute")
	b.ReportMetric(float64(hi)/(1000.0/60), "max/share")
}

// The goal: 1,000 jobs on "0 0 * * * ?" with a one-hour jitter,
// no minute of the hour holding more than twice its share.
func TestJitterSpread(t *testing.T) {
	s, _ := Parse("0 0 * * * ?")
	from := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var perMinute [60]int
	for i := range 1000 {
		p := Plan{Crons: []*Schedule{s}, Offset: Offset(fmt.Sprintf("report-%04d", i), time.Hour)}
		perMinute[p.Next(from, time.UTC).Minute()]++
	}
	for m, n := range perMinute {
		if n > 2*1000/60 {
			t.Errorf("minute %d holds %d of 1000 jittered fires (share 16.7)", m, n)
		}
	}
}

// BenchmarkHashSpread is BenchmarkJitterSpread for "0 H * * * ?": the
// minute each of 1,000 job names' H picks.
func BenchmarkHashSpread(b *testing.B) {
	var perMinute [60]int
	for range b.N {
		perMinute = [60]int{}
		for i := range 1000 {
			s, _ := ParseFor("0 H * * * ?", fmt.Sprintf("report-%04d", i))
			perMinute[nextBit(s.min, 0)]++
		}
	}
	lo, hi := 1000, 0
	for _, n := range perMinute {
		lo, hi = min(lo, n), max(hi, n)
	}
	b.ReportMetric(float64(hi), "max/minute")
	b.ReportMetric(float64(lo), "min/minute")
	b.ReportMetric(float64(hi)/(1000.0/60), "max/share")
}
