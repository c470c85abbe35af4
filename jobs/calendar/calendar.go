package calendar

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
)

// ErrInvalid is wrapped by every validation and import error.
var ErrInvalid = errors.New("invalid calendar")

// Limits of one calendar.
const (
	MaxPeriods    = 5000
	MaxExcept     = 1000
	MaxNameLen    = 63
	maxRepeatDays = 366
)

// Calendar is a named calendar as stored per namespace.
type Calendar struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// TimeZone is the IANA zone its dates are days of ("" = the
	// scheduler's zone).
	TimeZone string `json:"timeZone,omitempty"`
	// Weekdays are the days fires happen on (MON…SUN); empty means every
	// day. ["MON","TUE","WED","THU","FRI"] is a business week.
	Weekdays []string `json:"weekdays,omitempty"`
	// Exclude are the periods no fire happens in.
	Exclude []Period `json:"exclude,omitempty"`
}

// Period is an excluded date, date range or time range, possibly
// repeating.
type Period struct {
	Summary string `json:"summary,omitempty"`
	// From is a date (2026-12-25), a wall-clock time of the calendar's zone
	// (2026-12-24T18:00:00) or an instant (RFC 3339 with an offset).
	From string `json:"from"`
	// To is the last excluded day when From is a date (empty: From alone),
	// or the end (exclusive) when From is a time.
	To string `json:"to,omitempty"`
	// Repeat is "" (once), "YEARLY" or "WEEKLY", every Interval (default 1)
	// years or weeks, the last repetition starting on or before Until (a
	// date; empty: forever).
	Repeat   string `json:"repeat,omitempty"`
	Interval int    `json:"interval,omitempty"`
	Until    string `json:"until,omitempty"`
	// Except are starts of repetitions that do not exclude (iCalendar's
	// EXDATE): dates for a period of days, times or instants for a timed
	// one, each the start of one of its repetitions.
	Except []string `json:"except,omitempty"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

var weekdayNames = map[string]time.Weekday{
	"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday, "WED": time.Wednesday,
	"THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday,
}

// ValidateName checks a calendar's name (lower-case letters, digits, '.',
// '_' and '-', at most MaxNameLen).
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name is required", ErrInvalid)
	}
	if len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("%w: name %q must be 1-%d lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit", ErrInvalid, name, MaxNameLen)
	}
	return nil
}

// Validate checks every field, naming the first bad one.
func (c Calendar) Validate() error {
	_, err := c.Compile(time.UTC)
	return err
}

// Compiled is a calendar ready to answer Excluded; immutable.
type Compiled struct {
	loc     *time.Location
	days    uint8 // bit time.Weekday set: fires that day
	periods []period
}

type period struct {
	start    time.Time // in loc
	days     int       // > 0: whole days from start's midnight
	length   time.Duration
	repeat   string
	interval int
	until    time.Time      // zero: forever; else the last start's day end
	except   map[int64]bool // starts (Unix seconds) of repetitions kept
}

var _ cron.Excluder = (*Compiled)(nil)

// Compile checks the calendar and returns its compiled form; fallback is
// the zone of a calendar that names none.
func (c Calendar) Compile(fallback *time.Location) (*Compiled, error) {
	if err := ValidateName(c.Name); err != nil {
		return nil, err
	}
	loc := fallback
	if loc == nil {
		loc = time.UTC
	}
	if c.TimeZone != "" {
		l, err := time.LoadLocation(c.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("%w: timeZone %q is not an IANA time zone name", ErrInvalid, c.TimeZone)
		}
		loc = l
	}
	out := &Compiled{loc: loc}
	if len(c.Weekdays) == 0 {
		out.days = 0x7f
	}
	for _, d := range c.Weekdays {
		wd, ok := weekdayNames[strings.ToUpper(strings.TrimSpace(d))]
		if !ok {
			return nil, fmt.Errorf("%w: weekdays: %q is not one of MON, TUE, WED, THU, FRI, SAT, SUN", ErrInvalid, d)
		}
		out.days |= 1 << wd
	}
	if len(c.Exclude) > MaxPeriods {
		return nil, fmt.Errorf("%w: exclude has %d periods; at most %d allowed", ErrInvalid, len(c.Exclude), MaxPeriods)
	}
	for i, p := range c.Exclude {
		cp, err := p.compile(loc)
		if err != nil {
			return nil, fmt.Errorf("%w: exclude[%d]: %v", ErrInvalid, i, err)
		}
		out.periods = append(out.periods, cp)
	}
	return out, nil
}

const (
	dateLayout = "2006-01-02"
	wallLayout = "2006-01-02T15:04:05"
)

// parseWhen reads a date (isDate), a wall-clock time in loc or an RFC 3339
// instant.
func parseWhen(s string, loc *time.Location) (t time.Time, isDate bool, err error) {
	if t, err := time.ParseInLocation(dateLayout, s, loc); err == nil {
		return t, true, nil
	}
	if t, err := time.ParseInLocation(wallLayout, s, loc); err == nil {
		return t, false, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.In(loc), false, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is not a date (2026-12-25), a time (2026-12-24T18:00:00) or an RFC 3339 instant", s)
}

func (p Period) compile(loc *time.Location) (period, error) {
	start, isDate, err := parseWhen(strings.TrimSpace(p.From), loc)
	if err != nil {
		return period{}, fmt.Errorf("from: %v", err)
	}
	out := period{start: start, repeat: strings.ToUpper(p.Repeat), interval: max(p.Interval, 1)}
	if err := p.compileLength(&out, isDate, loc); err != nil {
		return period{}, err
	}
	if p.Interval < 0 || p.Interval > 100 {
		return period{}, fmt.Errorf("interval %d out of range 1-100", p.Interval)
	}
	if err := p.checkRepeat(out); err != nil {
		return period{}, err
	}
	if p.Until != "" {
		u, err := time.ParseInLocation(dateLayout, strings.TrimSpace(p.Until), loc)
		if err != nil {
			return period{}, fmt.Errorf("until: %q is not a date (2030-12-31)", p.Until)
		}
		out.until = u.AddDate(0, 0, 1)
	}
	if err := p.compileExcept(&out, isDate, loc); err != nil {
		return period{}, err
	}
	return out, nil
}

// compileLength reads the period's end: whole days for a date (one when
// to is empty), a length for a time (to required, exclusive).
func (p Period) compileLength(out *period, isDate bool, loc *time.Location) error {
	switch {
	case isDate && p.To == "":
		out.days = 1
	case isDate:
		end, err := time.ParseInLocation(dateLayout, strings.TrimSpace(p.To), loc)
		if err != nil {
			return fmt.Errorf("to: %q is not a date like from (2026-12-31; the last excluded day)", p.To)
		}
		out.days = daysBetween(out.start, end) + 1
		if out.days < 1 {
			return fmt.Errorf("to %s is before from %s", p.To, p.From)
		}
	default:
		if p.To == "" {
			return fmt.Errorf("to is required when from is a time (the end, exclusive)")
		}
		end, endDate, err := parseWhen(strings.TrimSpace(p.To), loc)
		if err != nil || endDate {
			return fmt.Errorf("to: %q is not a time like from", p.To)
		}
		if !end.After(out.start) {
			return fmt.Errorf("to %s is not after from %s", p.To, p.From)
		}
		out.length = end.Sub(out.start)
	}
	return nil
}

// checkRepeat refuses an unknown repetition and a period longer than its
// repetition.
func (p Period) checkRepeat(out period) error {
	switch out.repeat {
	case "":
	case "YEARLY", "WEEKLY":
		span := out.days
		if span == 0 {
			span = int(out.length/(24*time.Hour)) + 1
		}
		limit := maxRepeatDays * out.interval
		if out.repeat == "WEEKLY" {
			limit = 7 * out.interval
		}
		if span > limit {
			return fmt.Errorf("a %s period may not be longer than its repetition (%d days)", strings.ToLower(out.repeat), limit)
		}
	default:
		return fmt.Errorf("repeat %q is not YEARLY or WEEKLY (or empty)", p.Repeat)
	}
	return nil
}

// compileExcept reads the repetitions kept: each a date or a time like
// from, each the start of a repetition.
func (p Period) compileExcept(out *period, isDate bool, loc *time.Location) error {
	if len(p.Except) > MaxExcept {
		return fmt.Errorf("except has %d entries; at most %d allowed", len(p.Except), MaxExcept)
	}
	for _, e := range p.Except {
		t, eDate, err := parseWhen(strings.TrimSpace(e), loc)
		if err != nil {
			return fmt.Errorf("except: %v", err)
		}
		if eDate != isDate {
			return fmt.Errorf("except: %q is not a %s like from", e, map[bool]string{true: "date", false: "time"}[isDate])
		}
		if !out.isStart(t) {
			return fmt.Errorf("except: %q is not the start of one of the period's repetitions", e)
		}
		if out.except == nil {
			out.except = map[int64]bool{}
		}
		out.except[t.Unix()] = true
	}
	return nil
}

// isStart reports whether t is the start of one of p's repetitions.
func (p period) isStart(t time.Time) bool {
	if t.Before(p.start) {
		return false
	}
	var k int
	switch p.repeat {
	case "YEARLY":
		k = (t.Year() - p.start.Year()) / p.interval
	case "WEEKLY":
		k = daysBetween(p.start, t) / (7 * p.interval)
	}
	for _, kk := range []int{k, k - 1, k + 1} {
		if kk < 0 {
			continue
		}
		if s, _ := p.occurrence(kk); s.Equal(t) && (p.until.IsZero() || s.Before(p.until)) {
			return true
		}
	}
	return false
}

func daysBetween(a, b time.Time) int {
	ua := time.Date(a.Year(), a.Month(), a.Day(), 0, 0, 0, 0, time.UTC)
	ub := time.Date(b.Year(), b.Month(), b.Day(), 0, 0, 0, 0, time.UTC)
	return int(ub.Sub(ua) / (24 * time.Hour))
}

// occurrence k of p: its start and end.
func (p period) occurrence(k int) (time.Time, time.Time) {
	s := p.start
	switch p.repeat {
	case "YEARLY":
		s = s.AddDate(k*p.interval, 0, 0)
	case "WEEKLY":
		s = s.AddDate(0, 0, 7*k*p.interval)
	}
	if p.days > 0 {
		return s, s.AddDate(0, 0, p.days)
	}
	return s, s.Add(p.length)
}

// contains reports whether t lies in an occurrence of p, and its end.
func (p period) contains(t time.Time) (bool, time.Time) {
	var k int
	switch p.repeat {
	case "":
		k = 0
	case "YEARLY":
		k = (t.Year() - p.start.Year()) / p.interval
	case "WEEKLY":
		k = daysBetween(p.start, t) / (7 * p.interval)
	}
	for _, kk := range []int{k, k - 1} {
		if kk < 0 {
			continue
		}
		s, e := p.occurrence(kk)
		if !p.until.IsZero() && !s.Before(p.until) {
			continue
		}
		if p.except[s.Unix()] {
			continue
		}
		if !t.Before(s) && t.Before(e) {
			return true, e
		}
	}
	return false, time.Time{}
}

// Excluded reports whether t is excluded: on a day that is not one of the
// calendar's weekdays, or in an excluded period; until is where the
// exclusion found ends.
func (c *Compiled) Excluded(t time.Time) (bool, time.Time) {
	lt := t.In(c.loc)
	if c.days&(1<<lt.Weekday()) == 0 {
		return true, time.Date(lt.Year(), lt.Month(), lt.Day()+1, 0, 0, 0, 0, c.loc)
	}
	for _, p := range c.periods {
		if ok, end := p.contains(lt); ok {
			return true, end
		}
	}
	return false, time.Time{}
}

// Location is the zone the calendar's days are read in.
func (c *Compiled) Location() *time.Location { return c.loc }

// SortedWeekdays returns the canonical spelling of weekdays (MON…SUN
// order), for storage.
func SortedWeekdays(days []string) []string {
	order := []string{"MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"}
	var out []string
	for _, d := range order {
		if slices.ContainsFunc(days, func(s string) bool { return strings.EqualFold(strings.TrimSpace(s), d) }) {
			out = append(out, d)
		}
	}
	return out
}
