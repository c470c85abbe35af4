package calendar

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxICSBytes bounds an imported .ics file.
const MaxICSBytes = 4 << 20

// ImportICS reads the VEVENTs of an iCalendar file (RFC 5545) as excluded
// periods: all-day events (DTSTART;VALUE=DATE) exclude their days (DTEND
// exclusive, as the RFC says), timed ones (UTC "Z", TZID= or floating in
// loc) their time range; an RRULE of FREQ=YEARLY or FREQ=WEEKLY (INTERVAL,
// UNTIL, COUNT, and BYDAY for weekly) repeats them, and EXDATE keeps the
// repetitions it names (Period.Except; a value that starts none of them is
// ignored, as RFC 5545 says). Other rules are refused with the event's
// line. loc is the calendar's zone.
func ImportICS(r io.Reader, loc *time.Location) ([]Period, error) {
	lines, err := unfold(io.LimitReader(r, MaxICSBytes+1))
	if err != nil {
		return nil, err
	}
	if err := checkICS(lines); err != nil {
		return nil, err
	}
	var out []Period
	var ev map[string]icsProp
	var exdates []icsProp
	evLine := 0
	for i, l := range lines {
		name, params, value := splitProp(l)
		switch {
		case name == "BEGIN" && strings.EqualFold(value, "VEVENT"):
			ev, evLine, exdates = map[string]icsProp{}, i+1, nil
		case name == "END" && strings.EqualFold(value, "VEVENT") && ev != nil:
			ps, err := eventPeriods(ev, exdates, loc)
			if err != nil {
				return nil, fmt.Errorf("%w: .ics event at line %d: %v", ErrInvalid, evLine, err)
			}
			out = append(out, ps...)
			ev = nil
		case ev != nil && name == "EXDATE":
			// EXDATE may repeat, each line with its own TZID: kept apart.
			exdates = append(exdates, icsProp{params: params, value: value})
		case ev != nil:
			if _, seen := ev[name]; !seen {
				ev[name] = icsProp{params: params, value: value}
			}
		}
		if len(out) > MaxPeriods {
			return nil, fmt.Errorf("%w: .ics has more than %d periods", ErrInvalid, MaxPeriods)
		}
	}
	if ev != nil {
		return nil, fmt.Errorf("%w: .ics event at line %d has no END:VEVENT", ErrInvalid, evLine)
	}
	return out, nil
}

type icsProp struct {
	params map[string]string
	value  string
}

// unfold joins RFC 5545 folded lines (a continuation starts with a space
// or a tab).
func unfold(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxICSBytes+1)
	var lines []string
	total := 0
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		total += len(l) + 1
		if total > MaxICSBytes {
			return nil, fmt.Errorf("%w: .ics is larger than %d bytes", ErrInvalid, MaxICSBytes)
		}
		if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(lines) > 0 {
			lines[len(lines)-1] += l[1:]
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading .ics: %v", ErrInvalid, err)
	}
	return lines, nil
}

// splitProp splits "NAME;P=V;Q=W:value".
func splitProp(l string) (string, map[string]string, string) {
	head, value, _ := strings.Cut(l, ":")
	parts := strings.Split(head, ";")
	params := map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		params[strings.ToUpper(k)] = strings.Trim(v, `"`)
	}
	return strings.ToUpper(strings.TrimSpace(parts[0])), params, value
}

// icsTime reads a DATE or DATE-TIME value.
func icsTime(p icsProp, loc *time.Location) (time.Time, bool, error) {
	v := strings.TrimSpace(p.value)
	if strings.EqualFold(p.params["VALUE"], "DATE") || len(v) == 8 {
		t, err := time.ParseInLocation("20060102", v, loc)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%q is not a DATE (YYYYMMDD)", v)
		}
		return t, true, nil
	}
	in := loc
	if tz := p.params["TZID"]; tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("TZID %q is not an IANA time zone name", tz)
		}
		in = l
	}
	if strings.HasSuffix(v, "Z") {
		t, err := time.Parse("20060102T150405Z", v)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%q is not a DATE-TIME (YYYYMMDDTHHMMSSZ)", v)
		}
		return t, false, nil
	}
	t, err := time.ParseInLocation("20060102T150405", v, in)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q is not a DATE-TIME (YYYYMMDDTHHMMSS)", v)
	}
	return t, false, nil
}

func eventPeriods(ev map[string]icsProp, exdates []icsProp, loc *time.Location) ([]Period, error) {
	ds, ok := ev["DTSTART"]
	if !ok {
		return nil, fmt.Errorf("no DTSTART")
	}
	start, isDate, err := icsTime(ds, loc)
	if err != nil {
		return nil, fmt.Errorf("DTSTART: %v", err)
	}
	summary := unescape(ev["SUMMARY"].value)
	var end time.Time
	if de, ok := ev["DTEND"]; ok {
		e, eDate, err := icsTime(de, loc)
		if err != nil {
			return nil, fmt.Errorf("DTEND: %v", err)
		}
		if eDate != isDate {
			return nil, fmt.Errorf("DTSTART and DTEND differ in kind (DATE and DATE-TIME)")
		}
		end = e
	} else if du, ok := ev["DURATION"]; ok {
		d, err := parseDuration(du.value)
		if err != nil {
			return nil, fmt.Errorf("DURATION: %v", err)
		}
		end = start.Add(d)
	} else if isDate {
		end = start.AddDate(0, 0, 1)
	} else {
		end = start // a timed event without an end excludes an instant
	}
	p := Period{Summary: summary}
	if isDate {
		last := end.AddDate(0, 0, -1)
		if last.Before(start) {
			return nil, fmt.Errorf("DTEND %s is not after DTSTART %s", end.Format(dateLayout), start.Format(dateLayout))
		}
		p.From = start.Format(dateLayout)
		if !last.Equal(start) {
			p.To = last.Format(dateLayout)
		}
	} else {
		if !end.After(start) {
			end = start.Add(time.Second)
		}
		p.From, p.To = start.In(loc).Format(time.RFC3339), end.In(loc).Format(time.RFC3339)
	}
	rr, ok := ev["RRULE"]
	if !ok {
		return []Period{p}, nil
	}
	ps, err := applyRule(p, start, rr.value, loc)
	if err != nil {
		return nil, err
	}
	for _, ex := range exdates {
		if err := applyExdates(ps, ex, isDate, loc); err != nil {
			return nil, fmt.Errorf("EXDATE: %v", err)
		}
	}
	return ps, nil
}

// applyExdates sets each period's Except to the EXDATE values that start
// one of its repetitions; the others are ignored (RFC 5545).
func applyExdates(ps []Period, ex icsProp, isDate bool, loc *time.Location) error {
	for _, v := range strings.Split(ex.value, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		t, eDate, err := icsTime(icsProp{params: ex.params, value: v}, loc)
		if err != nil {
			return err
		}
		when := t.In(loc).Format(time.RFC3339)
		if isDate {
			// An EXDATE of a day event names the day, whatever its kind.
			when = t.In(loc).Format(dateLayout)
			if !eDate {
				when = t.Format(dateLayout)
			}
		}
		for i := range ps {
			c := ps[i]
			c.Except = []string{when}
			if _, err := c.compile(loc); err == nil && len(ps[i].Except) < MaxExcept {
				ps[i].Except = append(ps[i].Except, when)
			}
		}
	}
	return nil
}

func applyRule(p Period, start time.Time, rule string, loc *time.Location) ([]Period, error) {
	parts, err := ruleParts(rule, start)
	if err != nil {
		return nil, err
	}
	p.Repeat = parts["FREQ"]
	if v := parts["INTERVAL"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("RRULE INTERVAL=%s is not a number 1-100", v)
		}
		p.Interval = n
	}
	if v := parts["UNTIL"]; v != "" {
		u, _, err := icsTime(icsProp{value: v}, loc)
		if err != nil {
			return nil, fmt.Errorf("RRULE UNTIL: %v", err)
		}
		p.Until = u.In(loc).Format(dateLayout)
	}
	days, err := ruleDays(parts["BYDAY"], start, loc)
	if err != nil {
		return nil, err
	}
	if v := parts["COUNT"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("RRULE COUNT=%s is not a number 1-10000", v)
		}
		p.Until = nthOccurrence(p.Repeat, start, days, max(p.Interval, 1), n).In(loc).Format(dateLayout)
	}
	var out []Period
	for _, shift := range days {
		q := p
		if shift != 0 {
			q.From = shiftWhen(p.From, shift, loc)
			if q.To != "" {
				q.To = shiftWhen(p.To, shift, loc)
			}
		}
		out = append(out, q)
	}
	return out, nil
}

// ruleParts reads an RRULE's parts (upper-cased) and refuses what the
// calendar cannot keep: a frequency other than YEARLY or WEEKLY, an
// unknown part, BYDAY on a yearly rule, BYMONTH or BYMONTHDAY other than
// DTSTART's own.
func ruleParts(rule string, start time.Time) (map[string]string, error) {
	parts := map[string]string{}
	for _, kv := range strings.Split(rule, ";") {
		k, v, _ := strings.Cut(kv, "=")
		parts[strings.ToUpper(strings.TrimSpace(k))] = strings.ToUpper(strings.TrimSpace(v))
	}
	freq := parts["FREQ"]
	if freq != "YEARLY" && freq != "WEEKLY" {
		return nil, fmt.Errorf("RRULE FREQ=%s is not supported (YEARLY and WEEKLY are)", freq)
	}
	for k := range parts {
		switch k {
		case "FREQ", "INTERVAL", "UNTIL", "COUNT", "WKST":
		case "BYDAY":
			if freq != "WEEKLY" {
				return nil, fmt.Errorf("RRULE BYDAY is supported with FREQ=WEEKLY only")
			}
		case "BYMONTH", "BYMONTHDAY":
			// FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25 restates DTSTART: checked below.
		default:
			return nil, fmt.Errorf("RRULE part %s is not supported", k)
		}
	}
	if m := parts["BYMONTH"]; m != "" && m != strconv.Itoa(int(start.Month())) {
		return nil, fmt.Errorf("RRULE BYMONTH=%s differs from DTSTART's month (not supported)", m)
	}
	if d := parts["BYMONTHDAY"]; d != "" && d != strconv.Itoa(start.Day()) {
		return nil, fmt.Errorf("RRULE BYMONTHDAY=%s differs from DTSTART's day (not supported)", d)
	}
	return parts, nil
}

// ruleDays is BYDAY as days after DTSTART (one weekly period each); none
// listed: DTSTART's own day.
func ruleDays(byDay string, start time.Time, loc *time.Location) ([]int, error) {
	if byDay == "" {
		return []int{0}, nil
	}
	var days []int
	for _, d := range strings.Split(byDay, ",") {
		wd, ok := icsDays[d]
		if !ok {
			return nil, fmt.Errorf("RRULE BYDAY %q is not one of MO,TU,WE,TH,FR,SA,SU", d)
		}
		days = append(days, (int(wd)-int(start.In(loc).Weekday())+7)%7)
	}
	return days, nil
}

// nthOccurrence is the day of a rule's n-th occurrence (COUNT becomes
// UNTIL).
func nthOccurrence(freq string, start time.Time, days []int, interval, n int) time.Time {
	if freq == "YEARLY" {
		return start.AddDate((n-1)*interval, 0, 0)
	}
	sorted := append([]int(nil), days...)
	slices.Sort(sorted)
	week, idx := (n-1)/len(sorted), (n-1)%len(sorted)
	return start.AddDate(0, 0, 7*week*interval+sorted[idx])
}

var icsDays = map[string]time.Weekday{"SU": 0, "MO": 1, "TU": 2, "WE": 3, "TH": 4, "FR": 5, "SA": 6}

func shiftWhen(s string, days int, loc *time.Location) string {
	if t, err := time.ParseInLocation(dateLayout, s, loc); err == nil {
		return t.AddDate(0, 0, days).Format(dateLayout)
	}
	t, _ := time.Parse(time.RFC3339, s)
	return t.In(loc).AddDate(0, 0, days).Format(time.RFC3339)
}

// parseDuration reads an RFC 5545 DURATION (P1D, PT2H30M, P1W).
func parseDuration(v string) (time.Duration, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "+")
	if !strings.HasPrefix(s, "P") {
		return 0, fmt.Errorf("%q is not a duration (P1D, PT2H)", v)
	}
	var d time.Duration
	num, inTime := 0, false
	for _, c := range s[1:] {
		switch {
		case c >= '0' && c <= '9':
			num = num*10 + int(c-'0')
			if num > 100000 {
				return 0, fmt.Errorf("%q is too long", v)
			}
			continue
		case c == 'T':
			inTime = true
		case c == 'W' && !inTime:
			d += time.Duration(num) * 7 * 24 * time.Hour
		case c == 'D' && !inTime:
			d += time.Duration(num) * 24 * time.Hour
		case c == 'H' && inTime:
			d += time.Duration(num) * time.Hour
		case c == 'M' && inTime:
			d += time.Duration(num) * time.Minute
		case c == 'S' && inTime:
			d += time.Duration(num) * time.Second
		default:
			return 0, fmt.Errorf("%q is not a duration (P1D, PT2H)", v)
		}
		num = 0
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", v)
	}
	return d, nil
}

func unescape(s string) string {
	r := strings.NewReplacer(`\,`, ",", `\;`, ";", `\n`, " ", `\N`, " ", `\\`, `\`)
	return r.Replace(s)
}

// checkICS refuses what is not an iCalendar file with an event: a
// holiday feed answering an HTML error page (or nothing) must not be
// stored as an empty calendar, which would drop every holiday.
func checkICS(lines []string) error {
	first := ""
	events := 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		name, _, value := splitProp(l)
		if first == "" {
			first = strings.ToUpper(name) + ":" + strings.ToUpper(value)
		}
		if name == "BEGIN" && strings.EqualFold(value, "VEVENT") {
			events++
		}
	}
	switch {
	case first != "BEGIN:VCALENDAR":
		return fmt.Errorf("%w: not an iCalendar file: it must begin with BEGIN:VCALENDAR (a feed's error page?); nothing was stored", ErrInvalid)
	case events == 0:
		return fmt.Errorf("%w: the iCalendar file holds no VEVENT: an empty feed would drop every date; nothing was stored", ErrInvalid)
	}
	return nil
}
