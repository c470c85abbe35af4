package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustParse(t testing.TB, expr string) *Schedule {
	t.Helper()
	s, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return s
}

const layout = "2006-01-02 15:04:05"

// fires formats the next n fires after start (UTC) as "YYYY-MM-DD hh:mm:ss";
// a zero Time is rendered as "-".
func fires(s *Schedule, start time.Time, loc *time.Location, n int) []string {
	var out []string
	t := start
	for range n {
		t = s.Next(t, loc)
		if t.IsZero() {
			out = append(out, "-")
			break
		}
		out = append(out, t.Format(layout))
	}
	return out
}

func TestQuartzExamples(t *testing.T) {
	jan1 := "2026-01-01 00:00:00" // a Thursday
	tests := []struct {
		expr  string
		start string
		want  []string
	}{
		{"0 0 12 * * ?", jan1, []string{"2026-01-01 12:00:00", "2026-01-02 12:00:00", "2026-01-03 12:00:00"}},
		{"0 15 10 ? * *", jan1, []string{"2026-01-01 10:15:00", "2026-01-02 10:15:00", "2026-01-03 10:15:00"}},
		{"0 15 10 * * ?", jan1, []string{"2026-01-01 10:15:00", "2026-01-02 10:15:00", "2026-01-03 10:15:00"}},
		{"0 15 10 * * ? *", jan1, []string{"2026-01-01 10:15:00", "2026-01-02 10:15:00", "2026-01-03 10:15:00"}},
		{"0 15 10 * * ? 2005", "2005-12-30 00:00:00", []string{"2005-12-30 10:15:00", "2005-12-31 10:15:00", "-"}},
		{"0 15 10 * * ? 2005", jan1, []string{"-"}},
		{"0 * 14 * * ?", jan1, []string{"2026-01-01 14:00:00", "2026-01-01 14:01:00", "2026-01-01 14:02:00"}},
		{"0 * 14 * * ?", "2026-01-01 14:58:30", []string{"2026-01-01 14:59:00", "2026-01-02 14:00:00", "2026-01-02 14:01:00"}},
		{"0 0/5 14 * * ?", "2026-01-01 14:50:00", []string{"2026-01-01 14:55:00", "2026-01-02 14:00:00", "2026-01-02 14:05:00"}},
		{"0 0/5 14,18 * * ?", "2026-01-01 14:50:00", []string{"2026-01-01 14:55:00", "2026-01-01 18:00:00", "2026-01-01 18:05:00"}},
		{"0 0/5 14,18 * * ?", "2026-01-01 18:52:00", []string{"2026-01-01 18:55:00", "2026-01-02 14:00:00", "2026-01-02 14:05:00"}},
		{"0 0-5 14 * * ?", "2026-01-01 14:03:00", []string{"2026-01-01 14:04:00", "2026-01-01 14:05:00", "2026-01-02 14:00:00"}},
		{"0 10,44 14 ? 3 WED", jan1, []string{"2026-03-04 14:10:00", "2026-03-04 14:44:00", "2026-03-11 14:10:00", "2026-03-11 14:44:00"}},
		{"0 15 10 ? * MON-FRI", jan1, []string{"2026-01-01 10:15:00", "2026-01-02 10:15:00", "2026-01-05 10:15:00", "2026-01-06 10:15:00"}},
		{"0 15 10 15 * ?", jan1, []string{"2026-01-15 10:15:00", "2026-02-15 10:15:00", "2026-03-15 10:15:00"}},
		{"0 15 10 L * ?", jan1, []string{"2026-01-31 10:15:00", "2026-02-28 10:15:00", "2026-03-31 10:15:00", "2026-04-30 10:15:00"}},
		{"0 15 10 L * ?", "2028-01-31 12:00:00", []string{"2028-02-29 10:15:00", "2028-03-31 10:15:00"}},
		{"0 15 10 L-2 * ?", jan1, []string{"2026-01-29 10:15:00", "2026-02-26 10:15:00", "2026-03-29 10:15:00"}},
		{"0 15 10 ? * 6L", jan1, []string{"2026-01-30 10:15:00", "2026-02-27 10:15:00", "2026-03-27 10:15:00"}},
		{"0 15 10 ? * 6L 2002-2005", jan1, []string{"-"}},
		{"0 15 10 ? * 6L 2002-2005", "2005-10-01 00:00:00", []string{"2005-10-28 10:15:00", "2005-11-25 10:15:00", "2005-12-30 10:15:00", "-"}},
		{"0 15 10 ? * 6#3", jan1, []string{"2026-01-16 10:15:00", "2026-02-20 10:15:00", "2026-03-20 10:15:00"}},
		{"0 0 12 1/5 * ?", jan1, []string{"2026-01-01 12:00:00", "2026-01-06 12:00:00", "2026-01-11 12:00:00", "2026-01-16 12:00:00",
			"2026-01-21 12:00:00", "2026-01-26 12:00:00", "2026-01-31 12:00:00", "2026-02-01 12:00:00", "2026-02-06 12:00:00"}},
		{"0 11 11 11 11 ?", jan1, []string{"2026-11-11 11:11:00", "2027-11-11 11:11:00", "2028-11-11 11:11:00"}},
		// Nearest weekday: Jan 15 is a Thursday, Feb 15 and Mar 15 Sundays.
		{"0 0 9 15W * ?", jan1, []string{"2026-01-15 09:00:00", "2026-02-16 09:00:00", "2026-03-16 09:00:00"}},
		// Aug 15 2026 is a Saturday.
		{"0 0 9 15W * ?", "2026-08-01 00:00:00", []string{"2026-08-14 09:00:00", "2026-09-15 09:00:00"}},
		// LW: Jan 31 is a Saturday, Feb 28 a Saturday, Mar 31 a Tuesday, May 31 a Sunday.
		{"0 0 9 LW * ?", jan1, []string{"2026-01-30 09:00:00", "2026-02-27 09:00:00", "2026-03-31 09:00:00", "2026-04-30 09:00:00", "2026-05-29 09:00:00"}},
		// 1W: Aug 1 is a Saturday (-> Monday 3rd, not July 31), Nov 1 a Sunday.
		{"0 0 9 1W * ?", "2026-07-15 00:00:00", []string{"2026-08-03 09:00:00", "2026-09-01 09:00:00", "2026-10-01 09:00:00", "2026-11-02 09:00:00"}},
		// 31W: no fire in 30-day months; May 31 is a Sunday and the last day -> Friday 29th.
		{"0 0 9 31W * ?", "2026-04-01 00:00:00", []string{"2026-05-29 09:00:00", "2026-07-31 09:00:00", "2026-08-31 09:00:00", "2026-10-30 09:00:00"}},
		// Leap years, including 2100 which is not one.
		{"0 0 0 29 2 ?", jan1, []string{"2028-02-29 00:00:00", "2032-02-29 00:00:00", "2036-02-29 00:00:00"}},
		{"0 0 0 29 2 ?", "2097-01-01 00:00:00", []string{"2104-02-29 00:00:00"}},
		{"0 0 0 L 2 ?", "2099-06-01 00:00:00", []string{"2100-02-28 00:00:00", "2101-02-28 00:00:00"}},
		{"0/5 * * * * ?", jan1, []string{"2026-01-01 00:00:05", "2026-01-01 00:00:10", "2026-01-01 00:00:15"}},
		{"0/5 * * * * ?", "2026-12-31 23:59:52", []string{"2026-12-31 23:59:55", "2027-01-01 00:00:00", "2027-01-01 00:00:05"}},
		{"0/5 * * * * * ?", jan1, []string{"2026-01-01 00:00:05", "2026-01-01 00:00:10", "2026-01-01 00:00:15"}},
		// Extensions and corner cases.
		{"0 0 12 ? * L", jan1, []string{"2026-01-03 12:00:00", "2026-01-10 12:00:00", "2026-01-17 12:00:00"}},
		{"0 0 12 ? * 2#5", jan1, []string{"2026-03-30 12:00:00", "2026-06-29 12:00:00"}},
		{"0 0 12 ? jan,Mar mon-fri", "2026-01-30 00:00:00", []string{"2026-01-30 12:00:00", "2026-03-02 12:00:00"}},
		{"0 0 22-1 * * ?", "2025-12-31 23:30:00", []string{"2026-01-01 00:00:00", "2026-01-01 01:00:00", "2026-01-01 22:00:00", "2026-01-01 23:00:00", "2026-01-02 00:00:00"}},
		{"0 0 12 ? * FRI-MON", jan1, []string{"2026-01-02 12:00:00", "2026-01-03 12:00:00", "2026-01-04 12:00:00", "2026-01-05 12:00:00", "2026-01-09 12:00:00"}},
		{"30 */20 9-10/1 1,15 * ?", jan1, []string{"2026-01-01 09:00:30", "2026-01-01 09:20:30", "2026-01-01 09:40:30", "2026-01-01 10:00:30"}},
		{"0 0 0 1 1 ? 2199", "2198-06-01 00:00:00", []string{"2199-01-01 00:00:00", "-"}},
		{"59 59 23 31 12 ? *", "2199-12-31 23:59:58", []string{"2199-12-31 23:59:59", "-"}},
		{"0 0 0 30 2 ?", jan1, []string{"-"}}, // February 30th never comes
		{"0 0 0 1 1 ? 2030/50", jan1, []string{"2030-01-01 00:00:00", "2080-01-01 00:00:00", "2130-01-01 00:00:00", "2180-01-01 00:00:00", "-"}},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.expr)
		start, err := time.ParseInLocation(layout, tt.start, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		got := fires(s, start, time.UTC, len(tt.want))
		if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
			t.Errorf("%q after %s:\n got  %v\n want %v", tt.expr, tt.start, got, tt.want)
		}
		if s.String() != tt.expr {
			t.Errorf("String() = %q, want %q", s.String(), tt.expr)
		}
	}
}

func TestNextSubSecondAndNilLoc(t *testing.T) {
	s := mustParse(t, "0/5 * * * * ?")
	start := time.Date(2026, 1, 1, 0, 0, 4, 500_000_000, time.UTC)
	if got := s.Next(start, nil); !got.Equal(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)) {
		t.Errorf("Next(00:00:04.5) = %v", got)
	}
	start = time.Date(2026, 1, 1, 0, 0, 5, 1, time.UTC)
	if got := s.Next(start, nil); !got.Equal(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)) {
		t.Errorf("Next(00:00:05.000000001) = %v", got)
	}
	// Input in another zone: evaluated on loc's wall clock.
	tokyo := mustLoc(t, "Asia/Tokyo")
	d := mustParse(t, "0 0 9 * * ?")
	got := d.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tokyo) // 09:00 JST already
	if want := time.Date(2026, 1, 2, 9, 0, 0, 0, tokyo); !got.Equal(want) || got.Location() != tokyo {
		t.Errorf("Tokyo: got %v, want %v", got, want)
	}
	if got := d.Next(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), tokyo); !got.IsZero() {
		t.Errorf("after 2199: got %v, want zero", got)
	}
	if got := d.NextN(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC, 0); len(got) != 0 {
		t.Errorf("NextN(0) = %v", got)
	}
}

type dstCase struct {
	expr  string
	start time.Time
	want  []string // RFC 3339 with offsets
}

func runDST(t *testing.T, loc *time.Location, cases []dstCase) {
	t.Helper()
	for _, c := range cases {
		s := mustParse(t, c.expr)
		var got []string
		cur := c.start
		for range c.want {
			next := s.Next(cur, loc)
			if !next.After(cur) {
				t.Errorf("%s %q: Next(%v) = %v, not after", loc, c.expr, cur, next)
				break
			}
			got = append(got, next.Format(time.RFC3339))
			cur = next
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s %q after %v:\n got  %v\n want %v", loc, c.expr, c.start.Format(time.RFC3339), got, c.want)
		}
	}
}

func TestDSTNewYork(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	at := func(mo time.Month, d, h, mi, s int) time.Time { return time.Date(2026, mo, d, h, mi, s, 0, ny) }
	est, edt := -5*time.Hour, -4*time.Hour
	// Second occurrence of 01:10 on 2026-11-01 (EST).
	secondOneTen := time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC).In(ny)
	if _, off := secondOneTen.Zone(); time.Duration(off)*time.Second != est {
		t.Fatalf("setup: %v", secondOneTen)
	}
	firstOneFiftyNine := time.Date(2026, 11, 1, 5, 59, 50, 0, time.UTC).In(ny)
	if _, off := firstOneFiftyNine.Zone(); time.Duration(off)*time.Second != edt {
		t.Fatalf("setup: %v", firstOneFiftyNine)
	}
	runDST(t, ny, []dstCase{
		// Spring forward 2026-03-08 02:00 EST -> 03:00 EDT.
		{"0 30 2 * * ?", at(3, 7, 3, 0, 0), []string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}[1:]},
		{"0 30 2 * * ?", at(3, 6, 12, 0, 0), []string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"0/5 * * * * ?", at(3, 8, 1, 59, 50), []string{"2026-03-08T01:59:55-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:00:05-04:00"}},
		{"0 0 * * * ?", at(3, 8, 0, 30, 0), []string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"0 0 */2 * * ?", at(3, 8, 1, 30, 0), []string{"2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"0 0 3 * * ?", at(3, 8, 1, 30, 0), []string{"2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
		{"0 15,45 2 * * ?", at(3, 8, 0, 0, 0), []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:15:00-04:00"}},
		// Fall back 2026-11-01 02:00 EDT -> 01:00 EST.
		{"0 30 1 * * ?", at(10, 31, 12, 0, 0), []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"0 30 1 * * ?", secondOneTen, []string{"2026-11-02T01:30:00-05:00"}},
		{"0 0 1-2 * * ?", at(10, 31, 12, 0, 0), []string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-02T01:00:00-05:00"}},
		{"0/5 * * * * ?", firstOneFiftyNine, []string{"2026-11-01T01:59:55-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:00:05-05:00"}},
		{"0 0/30 * * * ?", at(11, 1, 0, 10, 0), []string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00",
			"2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"0 0 0/1 * * ?", at(11, 1, 0, 10, 0), []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"0 15 * * * ?", secondOneTen, []string{"2026-11-01T01:15:00-05:00", "2026-11-01T02:15:00-05:00"}},
		// Far future relies on the zone's rule string rather than transitions
		// (and crosses 2196-12-30, where time.ZoneBounds misbehaves).
		{"0 0 0 * * ? 2199", at(1, 1, 0, 0, 0), []string{"2199-01-01T00:00:00-05:00", "2199-01-02T00:00:00-05:00"}},
		{"0 0 0 L 12 ? 2196-2199", at(1, 1, 0, 0, 0), []string{"2196-12-31T00:00:00-05:00", "2197-12-31T00:00:00-05:00"}},
		{"0 0 0 ? * 2#5 2199", at(1, 1, 0, 0, 0), []string{"2199-04-29T00:00:00-04:00"}},
		{"0 0 12,20 * * ?", time.Date(2196, 12, 29, 0, 0, 0, 0, ny), []string{"2196-12-29T12:00:00-05:00", "2196-12-29T20:00:00-05:00",
			"2196-12-30T12:00:00-05:00", "2196-12-30T20:00:00-05:00", "2196-12-31T12:00:00-05:00", "2196-12-31T20:00:00-05:00", "2197-01-01T12:00:00-05:00"}},
		{"0 30 2 * * ?", time.Date(2150, 3, 6, 12, 0, 0, 0, ny), []string{"2150-03-07T02:30:00-05:00", "2150-03-08T03:00:00-04:00", "2150-03-09T02:30:00-04:00"}},
	})
}

func TestDSTBerlin(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	at := func(mo time.Month, d, h, mi, s int) time.Time { return time.Date(2026, mo, d, h, mi, s, 0, berlin) }
	runDST(t, berlin, []dstCase{
		// Spring forward 2026-03-29 02:00 CET -> 03:00 CEST.
		{"0 30 2 * * ?", at(3, 28, 12, 0, 0), []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"0 */15 * * * ?", at(3, 29, 1, 40, 0), []string{"2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00"}},
		// Fall back 2026-10-25 03:00 CEST -> 02:00 CET.
		{"0 30 2 * * ?", at(10, 24, 12, 0, 0), []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"0 */15 * * * ?", time.Date(2026, 10, 25, 0, 40, 0, 0, time.UTC) /* 02:40 CEST */, []string{"2026-10-25T02:45:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T02:15:00+01:00",
			"2026-10-25T02:30:00+01:00", "2026-10-25T02:45:00+01:00", "2026-10-25T03:00:00+01:00"}},
		{"0 0 9 ? * SUN", at(10, 20, 0, 0, 0), []string{"2026-10-25T09:00:00+01:00", "2026-11-01T09:00:00+01:00"}},
	})
}

func TestDSTLordHowe(t *testing.T) {
	lh := mustLoc(t, "Australia/Lord_Howe")
	at := func(mo time.Month, d, h, mi, s int) time.Time { return time.Date(2026, mo, d, h, mi, s, 0, lh) }
	runDST(t, lh, []dstCase{
		// 2026-10-04 02:00 +10:30 -> 02:30 +11.
		{"0 15 2 * * ?", at(10, 3, 12, 0, 0), []string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"0 0/10 * * * ?", at(10, 4, 1, 45, 0), []string{"2026-10-04T01:50:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:40:00+11:00"}},
		// 2026-04-05 02:00 +11 -> 01:30 +10:30.
		{"0 45 1 * * ?", at(4, 4, 12, 0, 0), []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"0 0/15 * * * ?", time.Date(2026, 4, 4, 14, 40, 0, 0, time.UTC) /* 01:40 +11 */, []string{"2026-04-05T01:45:00+11:00", "2026-04-05T01:30:00+10:30", "2026-04-05T01:45:00+10:30", "2026-04-05T02:00:00+10:30"}},
	})
}

// TestStrictlyIncreasing walks several schedules through two years of DST
// transitions and checks that fires are strictly increasing and never skip
// more than one real period for interval schedules.
func TestStrictlyIncreasing(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "UTC", "Pacific/Apia"} {
		loc := mustLoc(t, zone)
		for _, tc := range []struct {
			expr   string
			maxGap time.Duration // 0: unchecked
		}{
			{"0 0/30 * * * ?", 30 * time.Minute},
			{"0 0 * * * ?", 90 * time.Minute}, // Lord_Howe repeats only 01:30-02:00
			{"0 30 1,2 * * ?", 0},
			{"0 0 0 * * ?", 0},
			{"0 15 10 ? * 6L", 0},
			{"0 0 12 LW * ?", 0},
		} {
			s := mustParse(t, tc.expr)
			cur := time.Date(2011, 1, 1, 0, 0, 0, 0, loc)
			end := time.Date(2013, 1, 1, 0, 0, 0, 0, loc)
			for n := 0; cur.Before(end); n++ {
				next := s.Next(cur, loc)
				if !next.After(cur) {
					t.Fatalf("%s %q: Next(%v) = %v", zone, tc.expr, cur, next)
				}
				if tc.maxGap > 0 && n > 0 && next.Sub(cur) > tc.maxGap && zone != "Pacific/Apia" {
					t.Errorf("%s %q: gap %v from %v to %v", zone, tc.expr, next.Sub(cur), cur, next)
				}
				cur = next
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expr, field, msg string
	}{
		{"", "", "empty expression"},
		{"0 0 12 * *", "", "expected 6 or 7 fields"},
		{"0 0 12 * * ? * *", "", "got 8"},
		{strings.Repeat("0 ", 200), "", "at most 256"},
		{"60 * * * * ?", "seconds", "value 60 out of range 0-59"},
		{"0 60 * * * ?", "minutes", "out of range 0-59"},
		{"0 0 24 * * ?", "hours", "value 24 out of range 0-23"},
		{"0 0 0 25-x * ?", "day-of-month", `invalid value "X"`},
		{"0 0 25 * * ?", "hours", "out of range 0-23"},
		{"0 0 0 32 * ?", "day-of-month", "value 32 out of range 1-31"},
		{"0 0 0 0 * ?", "day-of-month", "value 0 out of range 1-31"},
		{"0 0 0 * 13 ?", "month", "value 13 out of range 1-12"},
		{"0 0 0 * FOO ?", "month", `unknown name "FOO"`},
		{"0 0 0 ? * 8", "day-of-week", "value 8 out of range 1-7"},
		{"0 0 0 ? * 0", "day-of-week", "out of range 1-7"},
		{"0 0 0 ? * MOM", "day-of-week", `unknown name "MOM"`},
		{"0 0 0 * * ? 1969", "year", "out of range 1970-2199"},
		{"0 0 0 * * ? 2200", "year", "out of range 1970-2199"},
		{"0 0 0 * * ? 2010-2005", "year", "backwards"},
		{"0/0 * * * * ?", "seconds", "step 0"},
		{"*/61 * * * * ?", "seconds", "step 61"},
		{"0 0 0 1/x * ?", "day-of-month", "invalid step"},
		{"? * * * * ?", "seconds", `"?" is only allowed`},
		{"0 0 0 ?,1 * ?", "day-of-month", `"?" must stand alone`},
		{"0 0 0 1,,2 * ?", "day-of-month", "empty list item"},
		{"0 0 0 L-31 * ?", "day-of-month", "out of range 0-30"},
		{"0 0 0 32W * ?", "day-of-month", "out of range 1-31"},
		{"0 0 0 XW * ?", "day-of-month", "nearest-weekday"},
		{"0 0 0 5L * ?", "day-of-month", "invalid item"},
		{"0 0 0 ? * 6#6", "day-of-week", "out of range 1-5"},
		{"0 0 0 ? * 8#1", "day-of-week", "out of range 1-7"},
		{"0 0 0 ? * 9L", "day-of-week", "out of range 1-7"},
		{"0 0 0 15 * MON", "day-of-month/day-of-week", "specify ? in day-of-month or day-of-week"},
		{"0 0 0 1-31 * 1-7", "day-of-month/day-of-week", "specify ?"},
		{"0 0 -1 * * ?", "hours", "missing value"},
		{"0 0 1-2-3 * * ?", "hours", "invalid value"},
		{"0 0 99999999999 * * ?", "hours", "out of range 0-23"},
		{"0 0 ab * * ?", "hours", `invalid value "AB"`},
		{"0 0 0 * * ? ab", "year", "invalid value"},
		{"0 0 0 * JAN/0 ?", "month", "step 0"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.expr)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error", tt.expr, s)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): error %T is not *ParseError", tt.expr, err)
			continue
		}
		if pe.Field != tt.field {
			t.Errorf("Parse(%q): field %q, want %q (%v)", tt.expr, pe.Field, tt.field, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.msg) || !strings.HasPrefix(msg, "cron ") || (tt.field != "" && !strings.Contains(msg, tt.field+": ")) {
			t.Errorf("Parse(%q): error %q, want it to mention %q and the field %q", tt.expr, msg, tt.msg, tt.field)
		}
		if len(msg) > 400 {
			t.Errorf("Parse(%q): error message too long (%d)", tt.expr, len(msg))
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for _, expr := range []string{
		"0/5 * * * * ?", "0/5 * * * * * ?", "  0  0   12 * * ?  ", "0\t0\t12\t*\t*\t?",
		"0 0 12 ? * *", "0 0 12 * * *", "0 0 12 ? * ?", "0 0 12 * * ? *", "0 0 12 * * ? ?",
		"0 0 12 L,15 * ?", "0 0 12 1W,15W * ?", "0 0 12 ? * 2#1,6L", "0 0 12 ? * fri#2",
		"/10 * * * * ?", "0 0 12 ? 1-12/3 *", "0 0 12 ? DEC-FEB *", "0 0 12 ? * SUN,SAT",
		"0 0 12 1-31/2 * ?", "0 0 0 * * ? 2025,2030-2035/2", "00 000 0012 0000005 * ?",
	} {
		if _, err := Parse(expr); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	exprs := []string{"0/5 * * * * ?", "0 15 10 ? * 6L", "0 0 12 1/5 * ?", "0 10,44 14 ? 3 WED 2020-2030"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Parse(exprs[i%len(exprs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNext(b *testing.B) {
	ny := mustLoc(b, "America/New_York")
	for _, expr := range []string{"0/5 * * * * ?", "0 15 10 ? * 6L", "0 0 12 1/5 * ?"} {
		s := mustParse(b, expr)
		for _, loc := range []*time.Location{time.UTC, ny} {
			b.Run(expr+"/"+loc.String(), func(b *testing.B) {
				b.ReportAllocs()
				t := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
				for b.Loop() {
					// Restart every year so that the figures reflect "now"
					// rather than far-future zone rules.
					if t = s.Next(t, loc); t.IsZero() || t.Year() > 2026 {
						t = time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
					}
				}
			})
		}
	}
}
