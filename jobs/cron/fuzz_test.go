package cron

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
)

// fuzzZones are the zones Next is fuzzed in: UTC, DST zones with 1-hour
// and 30-minute shifts, a 45-minute offset, and a zone that skipped a
// whole day (Samoa, end of 2011).
var fuzzZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia"}

// Reference comparisons walk day by day, so they are made only from starts
// in this window (any start is still checked for bounded work and sanity).
var (
	refFrom = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	refTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

func fuzzSeeds(f *testing.F) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, expr := range []string{
		"0/5 * * * * ?", "0/5 * * * * * ?", "0 0 12 * * ?", "0 15 10 ? * MON-FRI", "0 15 10 L * ?",
		"0 15 10 ? * 6L", "0 15 10 ? * 6#3", "0 0 12 1W,15W * ?", "0 0 12 LW * ?", "0 0 12 L-2 * ?",
		"0 0 22-2 * * ?", "0 0 0 ? * FRI-MON", "0 0 0 29 2 ? 2096-2199/4", "0 30 2 * * ?", "0 30 1 * * ?",
		"0 0 0 30 2 ?", "0 0 0 31W 4 ?", "59 59 23 31 12 ? 2199", "0 0 0 1 1 ? 1970", "* * * * * ? *",
		"/10 * * * * ?", "0 0 12 ? 1-12/3 *", "0 0 12 ? dec-feb sun", "0 0 0 * * ? 2025,2030-2035/2",
		"0 0 0 15 * MON", "0 0 0 ?,1 * ?", "0 0 0 L-31 * ?", "0 0 99999999999 * * ?", "0 0 0 * * ? 2010-2005",
		"0/0 * * * * ?", "0 0 0 ? * 6#6", "0 0 0 * JAN/0 ?", "\t0  0\u00a012 * * ?", "0 0 0 0000005 * ?",
		strings.Repeat("1,", 127) + "1 * * * * ?",
	} {
		f.Add(expr, start, uint8(0))
	}
	f.Add("0 0 0 30 2 ?", int64(-1)<<62, uint8(0))                                        // never fires, from far in the past
	f.Add("0 0 0 * * ?", time.Date(2199, 12, 31, 12, 0, 0, 0, time.UTC).Unix(), uint8(1)) // the end of the calendar
	f.Add("0 30 2 * * ?", time.Date(2026, 3, 8, 1, 0, 0, 0, time.UTC).Unix()+5*3600, uint8(1))
	f.Add("0 0 * * * ?", time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC).Unix(), uint8(5))
	f.Add("0 0/15 * * * ?", time.Date(2026, 4, 5, 1, 30, 0, 0, time.UTC).Unix(), uint8(3))
}

// FuzzParseNext checks Parse against the independent reading of the syntax
// in refParse (accept the same expressions; name the same bad field), and
// Next against the slow reference matcher: in UTC the first fire after the
// start is exactly the reference's (it matches and nothing earlier does); in
// every zone fires strictly increase and match the wall clock (or end a
// spring-forward gap), and between two fires with no offset change in
// between nothing matches. Parse and every Next finish in bounded time.
func FuzzParseNext(f *testing.F) {
	fuzzSeeds(f)
	locs := make([]*time.Location, len(fuzzZones))
	for i, name := range fuzzZones {
		locs[i] = mustLoc(f, name)
	}
	f.Fuzz(func(t *testing.T, expr string, startUnix int64, zone uint8) {
		var s *Schedule
		var err error
		fuzzing.Bounded(t, "Parse", func() { s, err = Parse(expr) })
		if strings.ContainsAny(expr, "Hh") {
			// "H" (hash.go) is outside the reference parser: Parse must only
			// finish, and fail with a *ParseError (TestHashFields checks it).
			var pe *ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): error %T is not a *ParseError: %v", expr, err, err)
			}
			return
		}
		sp, badField, refOK := refParse(expr)
		if err != nil {
			checkParseError(t, expr, err, refOK, badField)
			return
		}
		if !refOK {
			t.Fatalf("Parse(%q) accepted what the documented syntax rejects (field %d)", expr, badField)
		}
		if s.String() != expr {
			t.Fatalf("String() = %q, want %q", s.String(), expr)
		}
		start := time.Unix(startUnix, 0)
		checkUTC(t, s, sp, start)
		checkZone(t, s, sp, start, locs[int(zone)%len(locs)])
	})
}

func checkParseError(t *testing.T, expr string, err error, refOK bool, badField int) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("Parse(%q): error %T is not a *ParseError: %v", expr, err, err)
	}
	if refOK {
		t.Fatalf("Parse(%q) rejected an expression the documented syntax accepts: %v", expr, err)
	}
	want := ""
	switch {
	case badField < numFields:
		want = fieldNames[badField]
	case len(strings.Fields(expr)) == 6 || len(strings.Fields(expr)) == 7:
		want = "day-of-month/day-of-week"
	}
	if len(expr) <= MaxExprLen && pe.Field != want {
		t.Fatalf("Parse(%q): error names field %q, want %q: %v", expr, pe.Field, want, err)
	}
	// The message quotes the expression and the bad item (%q: up to 4 bytes
	// per input byte): bounded by the input's length limit.
	if msg := err.Error(); msg == "" || len(msg) > 16*MaxExprLen {
		t.Fatalf("Parse(%q): error message of %d bytes", expr, len(msg))
	}
}

// nextBounded is Next under the hang detector.
func nextBounded(t *testing.T, s *Schedule, from time.Time, loc *time.Location) time.Time {
	t.Helper()
	var got time.Time
	fuzzing.Bounded(t, "Next", func() { got = s.Next(from, loc) })
	return got
}

func checkUTC(t *testing.T, s *Schedule, sp *refSpec, start time.Time) {
	t.Helper()
	cur := start
	for range 3 {
		got := nextBounded(t, s, cur, time.UTC)
		if cur.Unix() >= refFrom && cur.Unix() < refTo {
			if want := sp.refNext(cur); !got.Equal(want) {
				t.Fatalf("%q: Next(%v) = %v, reference %v", s, cur, got, want)
			}
		}
		if got.IsZero() {
			return
		}
		if !got.After(cur) || !sp.matches(got.UTC()) || got.Year() > MaxYear {
			t.Fatalf("%q: Next(%v) = %v does not match or is not after the start", s, cur, got)
		}
		cur = got
	}
}

func checkZone(t *testing.T, s *Schedule, sp *refSpec, start time.Time, loc *time.Location) {
	t.Helper()
	cur := start.In(loc)
	for range 3 {
		got := nextBounded(t, s, cur, loc)
		if got.IsZero() {
			return
		}
		if !got.After(cur) || got.Location() != loc {
			t.Fatalf("%s %q: Next(%v) = %v is not after the start in the zone", loc, s, cur, got)
		}
		_, before := got.Add(-time.Second).Zone()
		_, after := got.Zone()
		gapEnd := after > before
		if !sp.matches(got) && !gapEnd {
			t.Fatalf("%s %q: Next(%v) = %v does not match the fields", loc, s, cur, got)
		}
		if sameOffset(cur, got) && cur.Unix() >= refFrom && got.Unix() < refTo {
			// Wall clock and instants map one to one here: the reference on
			// wall-clock values finds the same first fire.
			_, off := cur.Zone()
			wall := time.Unix(cur.Unix()+int64(off), 0).UTC()
			_, gotOff := got.Zone()
			if want := sp.refNext(wall); !want.Equal(time.Unix(got.Unix()+int64(gotOff), 0)) && !gapEnd {
				t.Fatalf("%s %q: Next(%v) = %v, but %v (wall clock) matches earlier", loc, s, cur, got, want)
			}
		}
		cur = got
	}
}

// sameOffset reports whether loc's offset stays the same from a to b.
func sameOffset(a, b time.Time) bool {
	_, oa := a.Zone()
	_, ob := b.Zone()
	if oa != ob {
		return false
	}
	start, end := a.ZoneBounds()
	if end.IsZero() {
		return true
	}
	return end.After(b) && !start.After(a)
}

// FuzzNextGenerated drives the property test's expression generator from
// the fuzz input, so the engine explores well-formed schedules (which random
// strings rarely are) and start instants: the generator's meaning of the
// expression must agree with refParse's, and Next with the reference.
func FuzzNextGenerated(f *testing.F) {
	for i := range uint64(8) {
		f.Add(i, i*7919, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()+int64(i)*86399, uint8(i))
	}
	f.Add(uint64(1), uint64(2), int64(-1)<<40, uint8(0))
	f.Add(uint64(3), uint64(4), time.Date(2199, 12, 30, 0, 0, 0, 0, time.UTC).Unix(), uint8(2))
	locs := make([]*time.Location, len(fuzzZones))
	for i, name := range fuzzZones {
		locs[i] = mustLoc(f, name)
	}
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, startUnix int64, zone uint8) {
		expr, _ := genExpr(rand.New(rand.NewPCG(seed1, seed2)))
		var s *Schedule
		var err error
		fuzzing.Bounded(t, "Parse", func() { s, err = Parse(expr) })
		if err != nil {
			t.Fatalf("Parse(%q) of a generated expression: %v", expr, err)
		}
		sp, badField, ok := refParse(expr)
		if !ok {
			t.Fatalf("refParse(%q) rejected a generated expression (field %d)", expr, badField)
		}
		start := time.Unix(startUnix, 0)
		checkUTC(t, s, sp, start)
		checkZone(t, s, sp, start, locs[int(zone)%len(locs)])
	})
}
