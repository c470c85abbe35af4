package cron

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// MaxExprLen is the longest expression Parse accepts.
const MaxExprLen = 256

// Year bounds of the year field; Next never returns a time whose wall-clock
// year is after MaxYear.
const (
	MinYear = 1970
	MaxYear = 2199
)

// Field indexes, in expression order.
const (
	fSec = iota
	fMin
	fHour
	fDom
	fMonth
	fDow
	fYear
	numFields
)

var fieldNames = [numFields]string{"seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"}

var fieldBounds = [numFields]struct{ min, max int }{
	{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}, {MinYear, MaxYear},
}

var monthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

var dowNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

// day matching modes.
const (
	dayAll = iota // every day of the month
	dayDom        // day-of-month decides
	dayDow        // day-of-week decides
)

// Schedule is a parsed Quartz cron expression. It is immutable and safe for
// concurrent use.
type Schedule struct {
	expr string

	sec, min, hour uint64 // bit v set = value v matches
	month          uint64 // bits 1..12

	dayMode uint8

	dom        uint64 // plain days of month, bits 1..31
	domLast    uint64 // bit n set: "L-n" (n=0 is "L")
	domLW      bool   // "LW"
	domNearest uint64 // bit n set: "nW"

	dow     uint8    // plain weekdays, bit = time.Weekday (0=Sunday)
	dowLast uint8    // "nL": bit = time.Weekday
	dowNth  [7]uint8 // "n#k": dowNth[weekday] bit k set

	yearAll bool
	years   [4]uint64 // bit (y - MinYear)

	// repeatOverlap: the hours field is "*" or a step, so the schedule
	// fires in both occurrences of a repeated (fall-back) wall-clock hour.
	repeatOverlap bool

	// key is the name an "H" field is hashed with (hash.go); hashed says
	// the expression has one, so its instants depend on key.
	key    string
	hashed bool
}

// ParseError reports an invalid expression. Field names the offending field
// ("seconds", "minutes", "hours", "day-of-month", "month", "day-of-week",
// "year") or is empty when the problem concerns the whole expression.
type ParseError struct {
	Expr    string
	Field   string
	Message string
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cron %q: %s", e.Expr, e.Message)
	}
	return fmt.Sprintf("cron %q: %s: %s", e.Expr, e.Field, e.Message)
}

// String returns the original expression.
func (s *Schedule) String() string { return s.expr }

// Parse parses a Quartz cron expression:
// "seconds minutes hours day-of-month month day-of-week [year]".
// See the package documentation for the syntax.
func Parse(expr string) (*Schedule, error) { return ParseFor(expr, "") }

// ParseFor parses expr as Parse does, choosing the value of each "H" field
// from a hash of key (a job's or workflow's name): the same key gives the
// same instants in every process, restart and leader. See hash.go.
func ParseFor(expr, key string) (*Schedule, error) {
	if len(expr) > MaxExprLen {
		return nil, &ParseError{Expr: expr[:32] + "...", Message: fmt.Sprintf("expression is %d characters long; at most %d allowed", len(expr), MaxExprLen)}
	}
	fields := strings.Fields(expr)
	switch {
	case len(fields) == 0:
		return nil, &ParseError{Expr: expr, Message: "empty expression; expected 6 or 7 fields: seconds minutes hours day-of-month month day-of-week [year]"}
	case len(fields) < 6 || len(fields) > 7:
		return nil, &ParseError{Expr: expr, Message: fmt.Sprintf("expected 6 or 7 fields (seconds minutes hours day-of-month month day-of-week [year]), got %d", len(fields))}
	}
	s := &Schedule{expr: expr, key: key}
	for i, text := range fields {
		if err := s.parseField(i, strings.ToUpper(text)); err != "" {
			return nil, &ParseError{Expr: expr, Field: fieldNames[i], Message: err}
		}
	}
	if len(fields) == 6 {
		s.setAllYears()
	}

	domText, dowText := strings.ToUpper(fields[fDom]), strings.ToUpper(fields[fDow])
	domFree := domText == "*" || domText == "?"
	dowFree := dowText == "*" || dowText == "?"
	switch {
	case domFree && dowFree:
		s.dayMode = dayAll
	case dowFree:
		s.dayMode = dayDom
	case domFree:
		s.dayMode = dayDow
	default:
		return nil, &ParseError{Expr: expr, Field: "day-of-month/day-of-week",
			Message: fmt.Sprintf("both are restricted (%q and %q); specify ? in day-of-month or day-of-week", fields[fDom], fields[fDow])}
	}
	s.repeatOverlap = strings.ContainsAny(fields[fHour], "*/")
	return s, nil
}

func (s *Schedule) setAllYears() {
	s.yearAll = true
	for v := MinYear; v <= MaxYear; v++ {
		s.years[(v-MinYear)/64] |= 1 << ((v - MinYear) % 64)
	}
}

// parseField parses one upper-cased field; it returns a message on error.
func (s *Schedule) parseField(f int, text string) string {
	if text == "?" {
		switch f {
		case fDom, fDow:
			return "" // no restriction; dayMode is decided by Parse
		case fYear:
			s.setAllYears()
			return ""
		}
		return `"?" is only allowed in day-of-month, day-of-week and year`
	}
	if f == fYear && text == "*" {
		s.setAllYears()
		return ""
	}
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return fmt.Sprintf("empty list item in %q", text)
		}
		if msg := s.parseItem(f, item); msg != "" {
			return msg
		}
	}
	return ""
}

func (s *Schedule) parseItem(f int, item string) string {
	if strings.HasPrefix(item, "H") {
		resolved, msg := s.resolveHash(f, item)
		if msg != "" {
			return msg
		}
		item = resolved
	}
	switch f {
	case fDom:
		if done, msg := s.parseDomSpecial(item); done {
			return msg
		}
	case fDow:
		if done, msg := s.parseDowSpecial(item); done {
			return msg
		}
	default:
		if strings.Contains(item, "?") {
			return fmt.Sprintf(`"?" cannot be combined with other values (%q)`, item)
		}
	}
	if strings.Contains(item, "?") {
		return fmt.Sprintf(`"?" must stand alone in the field (%q)`, item)
	}
	from, to, step, msg := parseRange(f, item)
	if msg != "" {
		return msg
	}
	// Walk from..to (wrapping around the end of cyclic fields, e.g. 22-2
	// for hours or FRI-MON) taking every step-th value.
	lo, hi := fieldBounds[f].min, fieldBounds[f].max
	span := hi - lo + 1
	count := (to-from+span)%span + 1
	for i := 0; i < count; i += step {
		v := from + i
		if v > hi {
			v -= span
		}
		s.set(f, v)
	}
	return ""
}

// parseDomSpecial parses day-of-month's special forms (L, LW, L-n, nW);
// done says whether item was one (or a malformed one, with its message).
func (s *Schedule) parseDomSpecial(item string) (done bool, msg string) {
	switch {
	case item == "L":
		s.domLast |= 1
	case item == "LW":
		s.domLW = true
	case strings.HasPrefix(item, "L-"):
		n, ok := atoi(item[2:])
		if !ok {
			return true, fmt.Sprintf("invalid last-day offset %q (use L-n with n 0-30)", item)
		}
		if n > 30 {
			return true, fmt.Sprintf("last-day offset %d in %q out of range 0-30", n, item)
		}
		s.domLast |= 1 << n
	case strings.HasSuffix(item, "W"):
		n, ok := atoi(item[:len(item)-1])
		if !ok {
			return true, fmt.Sprintf("invalid nearest-weekday %q (use nW with n 1-31, or LW)", item)
		}
		if n < 1 || n > 31 {
			return true, fmt.Sprintf("value %d in %q out of range 1-31", n, item)
		}
		s.domNearest |= 1 << n
	case strings.ContainsAny(item, "LW#"):
		return true, fmt.Sprintf("invalid item %q (L, L-n, LW and nW are the special forms)", item)
	default:
		return false, ""
	}
	return true, ""
}

// parseDowSpecial parses day-of-week's special forms (L, dL, d#k); done
// says whether item was one (or a malformed one, with its message).
func (s *Schedule) parseDowSpecial(item string) (done bool, msg string) {
	switch {
	case item == "L":
		s.dow |= 1 << 6 // Saturday
	case strings.HasSuffix(item, "L"):
		wd, msg := parseValue(fDow, item[:len(item)-1])
		if msg != "" {
			return true, msg + fmt.Sprintf(" in %q", item)
		}
		s.dowLast |= 1 << (wd - 1)
	case strings.Contains(item, "#"):
		a, b, _ := strings.Cut(item, "#")
		wd, msg := parseValue(fDow, a)
		if msg != "" {
			return true, msg + fmt.Sprintf(" in %q", item)
		}
		k, ok := atoi(b)
		if !ok || k < 1 || k > 5 {
			return true, fmt.Sprintf("occurrence %q in %q out of range 1-5", b, item)
		}
		s.dowNth[wd-1] |= 1 << k
	default:
		return false, ""
	}
	return true, ""
}

// parseRange reads a plain item (v, a-b, */n, a/n, a-b/n) of field f into
// its first and last values and its step; a range may wrap around the
// end of a cyclic field.
func parseRange(f int, item string) (from, to, step int, msg string) {
	lo, hi := fieldBounds[f].min, fieldBounds[f].max
	rng, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		n, ok := atoi(stepText)
		if !ok {
			return 0, 0, 0, fmt.Sprintf("invalid step %q in %q", stepText, item)
		}
		span := hi - lo + 1
		if n == 0 {
			return 0, 0, 0, fmt.Sprintf("step 0 in %q is not allowed; use a step of at least 1", item)
		}
		if n > span {
			return 0, 0, 0, fmt.Sprintf("step %d in %q out of range 1-%d", n, item, span)
		}
		step = n
	}
	switch {
	case rng == "*" || (rng == "" && hasStep):
		return lo, hi, step, ""
	case rng == "":
		return 0, 0, 0, fmt.Sprintf("empty value in %q", item)
	}
	a, b, isRange := strings.Cut(rng, "-")
	if from, msg = parseValue(f, a); msg != "" {
		return 0, 0, 0, msg
	}
	switch {
	case isRange:
		if to, msg = parseValue(f, b); msg != "" {
			return 0, 0, 0, msg
		}
	case hasStep:
		to = hi // "a/n": from a to the end of the range
	default:
		to = from
	}
	if from > to && f == fYear {
		return 0, 0, 0, fmt.Sprintf("range %q goes backwards", rng)
	}
	return from, to, step, ""
}

func (s *Schedule) set(f, v int) {
	switch f {
	case fSec:
		s.sec |= 1 << v
	case fMin:
		s.min |= 1 << v
	case fHour:
		s.hour |= 1 << v
	case fDom:
		s.dom |= 1 << v
	case fMonth:
		s.month |= 1 << v
	case fDow:
		s.dow |= 1 << (v - 1)
	case fYear:
		s.years[(v-MinYear)/64] |= 1 << ((v - MinYear) % 64)
	}
}

// atoi parses a short unsigned decimal number; leading zeros do not count
// towards its length ("0000005" is 5, as Quartz reads it).
func atoi(s string) (int, bool) {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if s == "" || len(s) > 6 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func parseValue(f int, text string) (int, string) {
	lo, hi := fieldBounds[f].min, fieldBounds[f].max
	if text == "" {
		return 0, fmt.Sprintf("missing value (expected %d-%d)", lo, hi)
	}
	if text[0] >= 'A' && text[0] <= 'Z' {
		var names map[string]int
		var hint string
		switch f {
		case fMonth:
			names, hint = monthNames, "1-12 or JAN-DEC"
		case fDow:
			names, hint = dowNames, "1-7 or SUN-SAT"
		default:
			return 0, fmt.Sprintf("invalid value %q (expected a number %d-%d)", text, lo, hi)
		}
		v, ok := names[text]
		if !ok {
			return 0, fmt.Sprintf("unknown name %q (expected %s)", text, hint)
		}
		return v, ""
	}
	v, ok := atoi(text)
	if !ok {
		if _, err := strconv.ParseUint(text, 10, 64); err == nil {
			return 0, fmt.Sprintf("value %s out of range %d-%d", text, lo, hi)
		}
		return 0, fmt.Sprintf("invalid value %q (expected a number %d-%d)", text, lo, hi)
	}
	if v < lo || v > hi {
		return 0, fmt.Sprintf("value %d out of range %d-%d", v, lo, hi)
	}
	return v, ""
}

// ---------------------------------------------------------------------------
// Next

// maxWall is the wall-clock second (civil seconds since 1970-01-01) at which
// the search stops: 2200-01-01T00:00:00.
var maxWall = daysFromCivil(MaxYear+1, 1, 1) * 86400

// gregorianCycle is the period of the Gregorian calendar in years: 146097
// days, a whole number of weeks.
const gregorianCycle = 400

// maxSegments bounds the number of time-zone offset changes Next walks over.
const maxSegments = 4096

// Next returns the first fire time strictly after t, evaluated on the wall
// clock of loc (nil means UTC), in loc. It returns the zero Time when there
// is none before the end of MaxYear. See the package documentation for the
// handling of DST gaps and overlaps.
func (s *Schedule) Next(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	cur := t.In(loc)
	_, off := cur.Zone()
	start, _ := cur.ZoneBounds()
	end := zoneEnd(cur)
	minWall := cur.Unix() + int64(off) + 1
	if !s.repeatOverlap && !start.IsZero() && !start.After(cur) {
		// t may lie in the second occurrence of a repeated hour; a fixed
		// schedule already fired in the first one.
		if _, prev := start.Add(-time.Second).Zone(); prev > off {
			minWall = max(minWall, start.Unix()+int64(prev))
		}
	}
	for range maxSegments {
		o := int64(off)
		limit := maxWall
		if !end.IsZero() {
			limit = min(limit, end.Unix()+o)
		}
		if w, ok := s.nextWall(minWall, limit); ok {
			return time.Unix(w-o, 0).In(loc)
		}
		if end.IsZero() || end.Unix()+o >= maxWall {
			return time.Time{}
		}
		e := end.Unix()
		_, off2 := end.Zone()
		o2 := int64(off2)
		switch {
		case o2 > o: // spring forward: wall clock jumps from e+o to e+o2
			if _, ok := s.nextWall(max(minWall, e+o), e+o2); ok {
				return end
			}
			minWall = e + o2
		case s.repeatOverlap: // fall back: replay the repeated wall times
			minWall = e + o2
		default: // fall back, fixed-time schedule: skip the repeated wall times
			minWall = e + o
		}
		off = off2
		end = zoneEnd(end)
	}
	return time.Time{}
}

// zoneEnd returns the first instant after t at which loc's offset may
// change, or the zero Time if it never does. Boundaries where the offset
// stays the same are harmless.
func zoneEnd(t time.Time) time.Time {
	_, end := t.ZoneBounds()
	if end.IsZero() || end.After(t) {
		return end
	}
	// ZoneBounds can return a zone that does not contain t (seen with Go's
	// rule-based zones in far-future leap years, e.g. America/New_York at
	// 2196-12-30T19:00-05:00). Find the next offset change by scanning day
	// by day and bisecting to the second.
	_, off := t.Zone()
	loc := t.Location()
	lo := t.Unix()
	for range 400 {
		hi := lo + 86400
		if _, o := time.Unix(hi, 0).In(loc).Zone(); o != off {
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if _, o := time.Unix(mid, 0).In(loc).Zone(); o == off {
					lo = mid
				} else {
					hi = mid
				}
			}
			return time.Unix(hi, 0).In(loc)
		}
		lo = hi
	}
	return time.Unix(lo, 0).In(loc)
}

// NextN returns up to n consecutive fire times after t (fewer if the
// schedule runs out).
func (s *Schedule) NextN(t time.Time, loc *time.Location, n int) []time.Time {
	out := make([]time.Time, 0, max(n, 0))
	for range n {
		t = s.Next(t, loc)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// nextWall returns the smallest matching wall-clock time w (in civil seconds,
// i.e. seconds since 1970-01-01T00:00:00 of a clock without offsets) with
// from <= w < limit.
func (s *Schedule) nextWall(from, limit int64) (int64, bool) {
	if from >= limit {
		return 0, false
	}
	days := floorDiv(from, 86400)
	secs := int(from - days*86400)
	y, m, d := civilFromDays(days)
	h, mi, se := secs/3600, secs%3600/60, secs%60
	startYear := y
	for {
		if y > MaxYear {
			return 0, false
		}
		if s.yearAll && y > startYear+gregorianCycle {
			// Every year is allowed and the calendar (weekdays included)
			// repeats every 400 years: a schedule that has not fired in a
			// whole cycle never fires. Without this, a start far in the
			// past walked month by month through every year to 2199.
			return 0, false
		}
		if !s.yearOK(y) {
			ny, ok := s.nextYear(y + 1)
			if !ok {
				return 0, false
			}
			y, m, d, h, mi, se = ny, 1, 1, 0, 0, 0
		}
		nm := nextBit(s.month, m)
		if nm < 0 {
			y, m, d, h, mi, se = y+1, 1, 1, 0, 0, 0
			continue
		}
		if nm != m {
			m, d, h, mi, se = nm, 1, 0, 0, 0
		}
		nd := nextBit(s.dayMask(y, m), d)
		if nd < 0 {
			if daysFromCivil(y, m, 1)*86400 >= limit {
				return 0, false
			}
			m, d, h, mi, se = m+1, 1, 0, 0, 0
			if m > 12 {
				y, m = y+1, 1
			}
			continue
		}
		if nd != d {
			d, h, mi, se = nd, 0, 0, 0
		}
		dayStart := daysFromCivil(y, m, d) * 86400
		if dayStart >= limit {
			return 0, false
		}
		nh := nextBit(s.hour, h)
		if nh < 0 {
			d, h, mi, se = d+1, 0, 0, 0
			continue
		}
		if nh != h {
			h, mi, se = nh, 0, 0
		}
		nmi := nextBit(s.min, mi)
		if nmi < 0 {
			h, mi, se = h+1, 0, 0
			continue
		}
		if nmi != mi {
			mi, se = nmi, 0
		}
		ns := nextBit(s.sec, se)
		if ns < 0 {
			mi, se = mi+1, 0
			continue
		}
		w := dayStart + int64(h*3600+mi*60+ns)
		if w >= limit {
			return 0, false
		}
		return w, true
	}
}

func (s *Schedule) yearOK(y int) bool {
	if y < MinYear {
		return s.yearAll
	}
	if y > MaxYear {
		return false
	}
	i := y - MinYear
	return s.years[i/64]&(1<<(i%64)) != 0
}

func (s *Schedule) nextYear(y int) (int, bool) {
	if y < MinYear {
		if s.yearAll {
			return y, true
		}
		y = MinYear
	}
	for i := y - MinYear; i <= MaxYear-MinYear; {
		w := s.years[i/64] >> (i % 64)
		if w != 0 {
			i += bits.TrailingZeros64(w)
			if i > MaxYear-MinYear {
				break
			}
			return MinYear + i, true
		}
		i = (i/64 + 1) * 64
	}
	return 0, false
}

// dayMask returns the matching days of month m of year y as bits 1..31.
func (s *Schedule) dayMask(y, m int) uint64 {
	dim := daysIn(y, m)
	full := uint64(1)<<(dim+1) - 2
	switch s.dayMode {
	case dayDom:
		mask := s.dom & full
		if s.domLast != 0 {
			for l := s.domLast; l != 0; l &= l - 1 {
				if d := dim - bits.TrailingZeros64(l); d >= 1 {
					mask |= 1 << d
				}
			}
		}
		if s.domLW || s.domNearest != 0 {
			wd1 := weekday(daysFromCivil(y, m, 1))
			if s.domLW {
				d := dim
				switch (wd1 + d - 1) % 7 {
				case 6:
					d--
				case 0:
					d -= 2
				}
				mask |= 1 << d
			}
			for l := s.domNearest & full; l != 0; l &= l - 1 {
				n := bits.TrailingZeros64(l)
				d := n
				switch (wd1 + n - 1) % 7 {
				case 6: // Saturday: Friday before, or Monday after on the 1st
					if n == 1 {
						d = 3
					} else {
						d = n - 1
					}
				case 0: // Sunday: Monday after, or Friday before on the last day
					if n == dim {
						d = n - 2
					} else {
						d = n + 1
					}
				}
				mask |= 1 << d
			}
		}
		return mask
	case dayDow:
		wd1 := weekday(daysFromCivil(y, m, 1))
		var mask uint64
		for wd := 0; wd < 7; wd++ {
			first := 1 + (wd-wd1+7)%7
			if s.dow&(1<<wd) != 0 {
				for d := first; d <= dim; d += 7 {
					mask |= 1 << d
				}
			}
			if s.dowLast&(1<<wd) != 0 {
				mask |= 1 << (first + 7*((dim-first)/7))
			}
			if nth := s.dowNth[wd]; nth != 0 {
				for k := 1; k <= 5; k++ {
					if d := first + 7*(k-1); nth&(1<<k) != 0 && d <= dim {
						mask |= 1 << d
					}
				}
			}
		}
		return mask
	}
	return full
}

// nextBit returns the lowest set bit of mask at position >= from, or -1.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return -1
	}
	m := mask >> from
	if m == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(m)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// weekday of a day number (days since 1970-01-01, a Thursday); 0=Sunday.
func weekday(days int64) int {
	return int(((days+4)%7 + 7) % 7)
}

// daysFromCivil converts a proleptic Gregorian date to days since 1970-01-01
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	yy := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}
