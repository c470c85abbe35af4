package calendar

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
)

func mustCompile(t *testing.T, c Calendar) *Compiled {
	t.Helper()
	cc, err := c.Compile(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func at(s string, loc *time.Location) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		panic(err)
	}
	return t
}

func TestExcludedWeekdaysAndPeriods(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	c := mustCompile(t, Calendar{Name: "cn", TimeZone: "Asia/Shanghai", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"},
		Exclude: []Period{
			{Summary: "national day", From: "2026-10-01", To: "2026-10-07"},
			{Summary: "xmas", From: "2020-12-25", Repeat: "YEARLY"},
			{Summary: "maintenance", From: "2026-01-05T22:00:00", To: "2026-01-06T02:00:00", Repeat: "WEEKLY", Until: "2026-01-31"},
		}})
	cases := []struct {
		at        string
		excluded  bool
		untilWall string
	}{
		{"2026-11-27 09:00:00", false, ""},                   // Friday
		{"2026-11-28 09:00:00", true, "2026-11-29 00:00:00"}, // Saturday
		{"2026-10-05 09:00:00", true, "2026-10-08 00:00:00"}, // Monday in the range
		{"2026-10-08 00:00:00", false, ""},
		{"2031-12-25 10:00:00", true, "2031-12-26 00:00:00"}, // Thursday, yearly
		{"2019-12-25 10:00:00", false, ""},                   // before the first
		{"2026-01-12 23:00:00", true, "2026-01-13 02:00:00"}, // second Monday's window
		{"2026-01-13 01:59:59", true, "2026-01-13 02:00:00"},
		{"2026-01-13 02:00:00", false, ""},
		{"2026-02-02 23:00:00", false, ""}, // after until
	}
	for _, tc := range cases {
		ex, until := c.Excluded(at(tc.at, sh))
		if ex != tc.excluded {
			t.Errorf("%s: excluded %v, want %v", tc.at, ex, tc.excluded)
			continue
		}
		if ex && !until.Equal(at(tc.untilWall, sh)) {
			t.Errorf("%s: until %s, want %s", tc.at, until.In(sh), tc.untilWall)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Calendar
		want string
	}{
		{Calendar{Name: ""}, "name is required"},
		{Calendar{Name: "Bad Name"}, "lower-case"},
		{Calendar{Name: "a", TimeZone: "Mars/Base"}, "timeZone"},
		{Calendar{Name: "a", Weekdays: []string{"MONDAY"}}, "weekdays"},
		{Calendar{Name: "a", Exclude: []Period{{From: "25/12/2026"}}}, "exclude[0]: from"},
		{Calendar{Name: "a", Exclude: []Period{{From: "2026-12-25", To: "2026-12-20"}}}, "before from"},
		{Calendar{Name: "a", Exclude: []Period{{From: "2026-12-25T10:00:00"}}}, "to is required"},
		{Calendar{Name: "a", Exclude: []Period{{From: "2026-12-25", Repeat: "DAILY"}}}, "repeat"},
		{Calendar{Name: "a", Exclude: []Period{{From: "2026-12-01", To: "2026-12-20", Repeat: "WEEKLY"}}}, "longer than its repetition"},
	} {
		err := tc.c.Validate()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one with %q", tc.c, err, tc.want)
		}
	}
}

// A plan with a business calendar: weekend and holiday fires are skipped,
// not moved (Quartz's HolidayCalendar).
func TestPlanSkipsExcludedDays(t *testing.T) {
	c := mustCompile(t, Calendar{Name: "biz", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"},
		Exclude: []Period{{From: "2026-12-25"}}})
	s, _ := cron.Parse("0 0 9 * * ?")
	p := &cron.Plan{Crons: []*cron.Schedule{s}, Calendar: c}
	got := p.NextN(at("2026-12-23 12:00:00", time.UTC), time.UTC, 4)
	want := []string{"2026-12-24 09:00:00", "2026-12-28 09:00:00", "2026-12-29 09:00:00", "2026-12-30 09:00:00"}
	for i, w := range want {
		if i >= len(got) || !got[i].Equal(at(w, time.UTC)) {
			t.Fatalf("fires %v, want %v", got, want)
		}
	}
	// A calendar excluding every day: no fire, and Next returns.
	none := mustCompile(t, Calendar{Name: "none", Exclude: []Period{{From: "2020-01-06", To: "2020-01-12", Repeat: "WEEKLY"}}})
	p = &cron.Plan{Crons: []*cron.Schedule{s}, Calendar: none}
	if n := p.Next(at("2026-01-01 00:00:00", time.UTC), time.UTC); !n.IsZero() {
		t.Fatalf("a calendar excluding every day fired at %s", n)
	}
}

// BenchmarkPlanNextBusinessDays is the cost of one next fire of a job on
// "0 0 * * * ?" with a business-week calendar holding 30 holidays (what
// the producer adds per fire of a job that names a calendar, beside the
// registry read).
func BenchmarkPlanNextBusinessDays(b *testing.B) {
	cal := Calendar{Name: "biz", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"}}
	for i := range 30 {
		cal.Exclude = append(cal.Exclude, Period{From: time.Date(2026, 1, 1+i*12, 0, 0, 0, 0, time.UTC).Format("2006-01-02")})
	}
	c, err := cal.Compile(time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := cron.Parse("0 0 * * * ?")
	p := &cron.Plan{Crons: []*cron.Schedule{s}, Calendar: c, Offset: 17 * time.Minute}
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		t = p.Next(t, time.UTC)
		if t.Year() > 2026 {
			t = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		}
	}
}

func TestExceptKeepsRepetitions(t *testing.T) {
	c := mustCompile(t, Calendar{Name: "x", Exclude: []Period{
		{From: "2026-05-01", To: "2026-05-03", Repeat: "YEARLY", Except: []string{"2027-05-01"}},
	}})
	for _, tc := range []struct {
		at string
		ex bool
	}{{"2026-05-02 12:00:00", true}, {"2027-05-02 12:00:00", false}, {"2028-05-03 12:00:00", true}} {
		if ex, _ := c.Excluded(at(tc.at, time.UTC)); ex != tc.ex {
			t.Errorf("%s: excluded %v, want %v", tc.at, ex, tc.ex)
		}
	}
	for _, tc := range []struct {
		p    Period
		want string
	}{
		{Period{From: "2026-05-01", Repeat: "YEARLY", Except: []string{"2027-05-02"}}, "is not the start of one of the period's repetitions"},
		{Period{From: "2026-05-01", Repeat: "YEARLY", Except: []string{"2025-05-01"}}, "is not the start"},
		{Period{From: "2026-05-01", Repeat: "YEARLY", Until: "2027-12-31", Except: []string{"2028-05-01"}}, "is not the start"},
		{Period{From: "2026-05-01", Repeat: "YEARLY", Except: []string{"2027-05-01T00:00:00"}}, "is not a date like from"},
		{Period{From: "2026-05-01T10:00:00", To: "2026-05-01T11:00:00", Repeat: "WEEKLY", Except: []string{"2026-05-08"}}, "is not a time like from"},
		{Period{From: "2026-05-01", Repeat: "YEARLY", Except: []string{"soon"}}, "except:"},
	} {
		_, err := (Calendar{Name: "x", Exclude: []Period{tc.p}}).Compile(time.UTC)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}
