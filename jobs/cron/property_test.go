package cron

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refSpec is the meaning of a randomly generated expression, built
// independently of the parser so that a slow reference matcher can check
// Next's results.
type refSpec struct {
	sets             [numFields]map[int]bool // nil: every value
	domFree, dowFree bool
	domLast          []int // L-n offsets
	domLW            bool
	domNearest       []int    // nW
	dowLast          []int    // nL, Quartz numbering
	dowNth           [][2]int // n#k
}

var (
	refMonthNames = []string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	refDowNames   = []string{"", "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

func refName(r *rand.Rand, f, v int) string {
	if r.IntN(3) == 0 {
		switch f {
		case fMonth:
			return strings.ToLower(refMonthNames[v])
		case fDow:
			return refDowNames[v]
		}
	}
	return strconv.Itoa(v)
}

// genBasic renders a random standard item for field f within [lo, hi] and
// adds its values to set.
func genBasic(r *rand.Rand, f, lo, hi int, set map[int]bool) string {
	max := fieldBounds[f].max
	v := lo + r.IntN(hi-lo+1)
	switch r.IntN(5) {
	case 0: // single value
		set[v] = true
		return refName(r, f, v)
	case 1: // range
		w := v + r.IntN(hi-v+1)
		for x := v; x <= w; x++ {
			set[x] = true
		}
		return refName(r, f, v) + "-" + refName(r, f, w)
	case 2: // a/n
		n := 1 + r.IntN(max-lo+1)
		for x := v; x <= max; x += n {
			set[x] = true
		}
		return refName(r, f, v) + "/" + strconv.Itoa(n)
	case 3: // */n
		n := 1 + r.IntN(max-fieldBounds[f].min+1)
		for x := fieldBounds[f].min; x <= max; x += n {
			set[x] = true
		}
		return "*/" + strconv.Itoa(n)
	default: // a-b/n
		w := v + r.IntN(hi-v+1)
		n := 1 + r.IntN(w-v+1)
		for x := v; x <= w; x += n {
			set[x] = true
		}
		return refName(r, f, v) + "-" + refName(r, f, w) + "/" + strconv.Itoa(n)
	}
}

func genList(r *rand.Rand, f, lo, hi int, set map[int]bool) string {
	items := make([]string, 1+r.IntN(3))
	for i := range items {
		items[i] = genBasic(r, f, lo, hi, set)
	}
	return strings.Join(items, ",")
}

func genExpr(r *rand.Rand) (string, *refSpec) {
	sp := &refSpec{}
	fields := make([]string, 6, 7)
	for _, f := range []int{fSec, fMin, fHour, fMonth} {
		if r.IntN(3) == 0 {
			fields[f] = "*"
			continue
		}
		sp.sets[f] = map[int]bool{}
		fields[f] = genList(r, f, fieldBounds[f].min, fieldBounds[f].max, sp.sets[f])
	}
	sp.domFree, sp.dowFree = true, true
	fields[fDom], fields[fDow] = "*", "?"
	switch r.IntN(4) {
	case 0: // every day
		if r.IntN(2) == 0 {
			fields[fDom], fields[fDow] = "?", "*"
		}
	case 1, 2: // day-of-month
		sp.domFree = false
		sp.sets[fDom] = map[int]bool{}
		var items []string
		for range 1 + r.IntN(2) {
			switch r.IntN(5) {
			case 0:
				n := r.IntN(5)
				sp.domLast = append(sp.domLast, n)
				if n == 0 {
					items = append(items, "L")
				} else {
					items = append(items, "L-"+strconv.Itoa(n))
				}
			case 1:
				sp.domLW = true
				items = append(items, "LW")
			case 2:
				n := 1 + r.IntN(31)
				sp.domNearest = append(sp.domNearest, n)
				items = append(items, strconv.Itoa(n)+"W")
			default:
				items = append(items, genBasic(r, fDom, 1, 31, sp.sets[fDom]))
			}
		}
		fields[fDom] = strings.Join(items, ",")
		fields[fDow] = []string{"?", "*"}[r.IntN(2)]
	default: // day-of-week
		sp.dowFree = false
		sp.sets[fDow] = map[int]bool{}
		var items []string
		for range 1 + r.IntN(2) {
			n := 1 + r.IntN(7)
			switch r.IntN(4) {
			case 0:
				sp.dowLast = append(sp.dowLast, n)
				items = append(items, refName(r, fDow, n)+"L")
			case 1:
				k := 1 + r.IntN(5)
				sp.dowNth = append(sp.dowNth, [2]int{n, k})
				items = append(items, refName(r, fDow, n)+"#"+strconv.Itoa(k))
			default:
				items = append(items, genBasic(r, fDow, 1, 7, sp.sets[fDow]))
			}
		}
		fields[fDow] = strings.Join(items, ",")
		fields[fDom] = []string{"?", "*"}[r.IntN(2)]
	}
	switch r.IntN(4) {
	case 0: // six fields
	case 1:
		fields = append(fields, []string{"*", "?"}[r.IntN(2)])
	default:
		sp.sets[fYear] = map[int]bool{}
		fields = append(fields, genList(r, fYear, 2020, 2045, sp.sets[fYear]))
	}
	return strings.Join(fields, " "), sp
}

func (sp *refSpec) has(f, v int) bool { return sp.sets[f] == nil || sp.sets[f][v] }

func (sp *refSpec) dayMatches(date time.Time) bool {
	y, m, d := date.Date()
	dim := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	isWeekend := func(day int) bool {
		wd := time.Date(y, m, day, 0, 0, 0, 0, time.UTC).Weekday()
		return wd == time.Saturday || wd == time.Sunday
	}
	if !sp.domFree {
		ok := sp.sets[fDom][d]
		for _, n := range sp.domLast {
			ok = ok || d == dim-n
		}
		if sp.domLW {
			last := dim
			for isWeekend(last) {
				last--
			}
			ok = ok || d == last
		}
		for _, n := range sp.domNearest {
			if n > dim {
				continue
			}
			target := n
			switch time.Date(y, m, n, 0, 0, 0, 0, time.UTC).Weekday() {
			case time.Saturday:
				target = n - 1
				if n == 1 {
					target = 3
				}
			case time.Sunday:
				target = n + 1
				if n == dim {
					target = n - 2
				}
			}
			ok = ok || d == target
		}
		if !ok {
			return false
		}
	}
	if !sp.dowFree {
		q := int(date.Weekday()) + 1
		ok := sp.sets[fDow][q]
		for _, n := range sp.dowLast {
			ok = ok || (q == n && d+7 > dim)
		}
		for _, nk := range sp.dowNth {
			ok = ok || (q == nk[0] && (d-1)/7+1 == nk[1])
		}
		if !ok {
			return false
		}
	}
	return true
}

// matches reports whether the wall clock of t matches every field.
func (sp *refSpec) matches(t time.Time) bool {
	return sp.has(fYear, t.Year()) && sp.has(fMonth, int(t.Month())) && sp.dayMatches(t) &&
		sp.has(fHour, t.Hour()) && sp.has(fMin, t.Minute()) && sp.has(fSec, t.Second())
}

// refNext is a slow reference for Next in UTC: it walks day by day and then
// through every hour, minute and second of matching days.
func (sp *refSpec) refNext(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	for ; day.Year() <= MaxYear; day = day.AddDate(0, 0, 1) {
		if !sp.has(fYear, day.Year()) || !sp.has(fMonth, int(day.Month())) || !sp.dayMatches(day) {
			continue
		}
		for h := 0; h < 24; h++ {
			if !sp.has(fHour, h) || !day.Add(time.Duration(h+1)*time.Hour).After(t) {
				continue
			}
			for mi := 0; mi < 60; mi++ {
				if !sp.has(fMin, mi) || !day.Add(time.Duration(h)*time.Hour+time.Duration(mi+1)*time.Minute).After(t) {
					continue
				}
				for s := 0; s < 60; s++ {
					c := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second)
					if sp.has(fSec, s) && c.After(t) {
						return c
					}
				}
			}
		}
	}
	return time.Time{}
}

func randTime(r *rand.Rand, loc *time.Location) time.Time {
	from := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	to := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	return time.Unix(from+r.Int64N(to-from), int64(r.IntN(3))*400_000_000).In(loc)
}

func TestPropertyUTC(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 600
	if testing.Short() {
		n = 100
	}
	for range n {
		expr, sp := genExpr(r)
		s, err := Parse(expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		cur := randTime(r, time.UTC)
		for range 3 {
			got := s.Next(cur, time.UTC)
			want := sp.refNext(cur)
			if !got.Equal(want) {
				t.Fatalf("%q: Next(%v) = %v, reference %v", expr, cur, got, want)
			}
			if got.IsZero() {
				break
			}
			if !got.After(cur) || !sp.matches(got) {
				t.Fatalf("%q: Next(%v) = %v does not match or is not after", expr, cur, got)
			}
			cur = got
		}
	}
}

// TestPropertyZones checks, in zones with DST, that Next is strictly
// increasing and that every fire either matches the fields on the wall clock
// or is the instant ending a spring-forward gap.
func TestPropertyZones(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	locs := []*time.Location{mustLoc(t, "America/New_York"), mustLoc(t, "Europe/Berlin"), mustLoc(t, "Australia/Lord_Howe")}
	for i := range 400 {
		expr, sp := genExpr(r)
		s := mustParse(t, expr)
		loc := locs[i%len(locs)]
		cur := randTime(r, loc)
		for range 5 {
			got := s.Next(cur, loc)
			if got.IsZero() {
				break
			}
			if !got.After(cur) {
				t.Fatalf("%s %q: Next(%v) = %v not after", loc, expr, cur, got)
			}
			if !sp.matches(got) {
				_, before := got.Add(-time.Second).Zone()
				_, after := got.Zone()
				if after <= before {
					t.Fatalf("%s %q: Next(%v) = %v does not match the fields", loc, expr, cur, got)
				}
			}
			cur = got
		}
	}
}

func TestPropertyGeneratorParses(t *testing.T) {
	// Sanity check that the generator covers the special forms.
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[string]bool{}
	for range 2000 {
		expr, _ := genExpr(r)
		for _, tok := range []string{"L-", "LW", "W,", "#", "L ", "/", "-", ","} {
			if strings.Contains(expr, tok) {
				seen[tok] = true
			}
		}
	}
	if len(seen) != 8 {
		t.Errorf("generator coverage: %v", seen)
	}
}
