package calendar

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sampleICS = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:1\r\nDTSTART;VALUE=DATE:20261225\r\nDTEND;VALUE=DATE:20261226\r\nRRULE:FREQ=YEARLY\r\nSUMMARY:Christmas\\, Day\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:2\r\nDTSTART;VALUE=DATE:20261001\r\nDTEND;VALUE=DATE:20261008\r\nSUMMARY:National\r\n  Day\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:3\r\nDTSTART;TZID=Europe/Berlin:20260105T220000\r\nDTEND;TZID=Europe/Berlin:20260106T020000\r\nRRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=4\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:4\r\nDTSTART:20260301T100000Z\r\nDURATION:PT1H\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

func TestImportICS(t *testing.T) {
	ps, err := ImportICS(strings.NewReader(sampleICS), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Period{
		{Summary: "Christmas, Day", From: "2026-12-25", Repeat: "YEARLY"},
		{Summary: "National Day", From: "2026-10-01", To: "2026-10-07"},
		{From: "2026-01-05T21:00:00Z", To: "2026-01-06T01:00:00Z", Repeat: "WEEKLY", Until: "2026-01-14"},
		{From: "2026-01-07T21:00:00Z", To: "2026-01-08T01:00:00Z", Repeat: "WEEKLY", Until: "2026-01-14"},
		{From: "2026-03-01T10:00:00Z", To: "2026-03-01T11:00:00Z"},
	}
	if len(ps) != len(want) {
		t.Fatalf("periods %+v, want %+v", ps, want)
	}
	for i := range want {
		if !reflect.DeepEqual(ps[i], want[i]) {
			t.Errorf("period %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
	c := mustCompile(t, Calendar{Name: "ics", Exclude: ps})
	for _, tc := range []struct {
		at string
		ex bool
	}{
		{"2030-12-25 08:00:00", true}, {"2026-10-07 23:59:59", true}, {"2026-10-08 00:00:00", false},
		{"2026-01-14 22:00:00", true},  // 4th occurrence (Wed of week 2)
		{"2026-01-19 22:00:00", false}, // past COUNT
		{"2026-03-01 10:30:00", true},
	} {
		if ex, _ := c.Excluded(at(tc.at, time.UTC)); ex != tc.ex {
			t.Errorf("%s: excluded %v, want %v", tc.at, ex, tc.ex)
		}
	}
}

func TestImportICSErrors(t *testing.T) {
	ev := func(body string) string {
		return "BEGIN:VCALENDAR\nBEGIN:VEVENT\n" + body + "\nEND:VEVENT\nEND:VCALENDAR\n"
	}
	for _, tc := range []struct{ ics, want string }{
		{ev("SUMMARY:x"), "line 2: no DTSTART"},
		{ev("DTSTART:2026"), "DATE-TIME"},
		{ev("DTSTART;VALUE=DATE:20261225\nRRULE:FREQ=MONTHLY"), "FREQ=MONTHLY is not supported"},
		{ev("DTSTART;VALUE=DATE:20261225\nRRULE:FREQ=YEARLY\nEXDATE:2027"), "EXDATE: \"2027\" is not a DATE-TIME"},
		{ev("DTSTART;TZID=Mars/Base:20261225T100000"), "TZID"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\n", "no END:VEVENT"},
		{"garbage", "not an iCalendar file"},
		{"<html><body>502 Bad Gateway</body></html>", "not an iCalendar file"},
		{"", "not an iCalendar file"},
		{"BEGIN:VCALENDAR\nVERSION:2.0\nEND:VCALENDAR\n", "holds no VEVENT"},
		{ev("DTSTART;VALUE=DATE:20261225\nDTEND;VALUE=DATE:20261224"), "not after"},
	} {
		_, err := ImportICS(strings.NewReader(tc.ics), time.UTC)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.ics, err, tc.want)
		}
	}
}

// FuzzImportICS: any input ends in bounded time with periods that compile
// or an ErrInvalid.
func FuzzImportICS(f *testing.F) {
	f.Add(sampleICS)
	f.Add("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nRRULE:FREQ=WEEKLY;BYDAY=SA,SU;COUNT=3\nEND:VEVENT\n")
	f.Add("BEGIN:VEVENT\nDTSTART:20260101T000000\nDURATION:P1W2DT3H\nEND:VEVENT")
	f.Fuzz(func(t *testing.T, ics string) {
		ps, err := ImportICS(strings.NewReader(ics), time.UTC)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if len(ps) > MaxPeriods {
			t.Fatalf("%d periods", len(ps))
		}
		c := Calendar{Name: "f", Exclude: ps}
		cc, err := c.Compile(time.UTC)
		if err != nil {
			return // an imported period the calendar refuses (e.g. a weekly one longer than a week) is refused at PUT
		}
		cc.Excluded(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	})
}

func TestImportICSExdate(t *testing.T) {
	ics := "BEGIN:VCALENDAR\r\n" +
		// a yearly holiday kept in 2028 (EXDATE as a DATE), one not matching any repetition (ignored)
		"BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY\r\nEXDATE;VALUE=DATE:20281225,20281226\r\nEND:VEVENT\r\n" +
		// a weekly window on Mondays and Wednesdays: two EXDATE lines, one per split period
		"BEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20260105T220000\r\nDTEND;TZID=Europe/Berlin:20260106T020000\r\n" +
		"RRULE:FREQ=WEEKLY;BYDAY=MO,WE\r\nEXDATE;TZID=Europe/Berlin:20260112T220000\r\nEXDATE:20260114T210000Z\r\nEND:VEVENT\r\n" +
		"END:VCALENDAR\r\n"
	ps, err := ImportICS(strings.NewReader(ics), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Period{
		{From: "2026-12-25", Repeat: "YEARLY", Except: []string{"2028-12-25"}},
		{From: "2026-01-05T21:00:00Z", To: "2026-01-06T01:00:00Z", Repeat: "WEEKLY", Except: []string{"2026-01-12T21:00:00Z"}},
		{From: "2026-01-07T21:00:00Z", To: "2026-01-08T01:00:00Z", Repeat: "WEEKLY", Except: []string{"2026-01-14T21:00:00Z"}},
	}
	if !reflect.DeepEqual(ps, want) {
		t.Fatalf("periods\n%+v\nwant\n%+v", ps, want)
	}
	c := mustCompile(t, Calendar{Name: "ics", Exclude: ps})
	for _, tc := range []struct {
		at string
		ex bool
	}{
		{"2027-12-25 08:00:00", true}, {"2028-12-25 08:00:00", false}, {"2029-12-25 08:00:00", true},
		{"2026-01-05 22:00:00", true}, {"2026-01-12 22:00:00", false}, {"2026-01-19 22:00:00", true},
		{"2026-01-07 22:00:00", true}, {"2026-01-14 22:00:00", false}, {"2026-01-21 22:00:00", true},
	} {
		if ex, _ := c.Excluded(at(tc.at, time.UTC)); ex != tc.ex {
			t.Errorf("%s: excluded %v, want %v", tc.at, ex, tc.ex)
		}
	}
}
