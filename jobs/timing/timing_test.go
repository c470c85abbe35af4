package timing_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) // a Saturday

func weekdays(t *testing.T) timing.Compiled {
	t.Helper()
	c := calendar.Calendar{Name: "biz", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"}}
	compiled, err := c.Compile(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return timing.Compiled{Calendar: compiled, Source: "biz"}
}

// Plan takes the calendar of the source's namespace and the window the
// source inherits from the inputs, and nothing else.
func TestInputsPlan(t *testing.T) {
	in := timing.Inputs{Wide: time.Minute, Jitters: map[string]time.Duration{"pay": time.Hour},
		Calendars: map[string]timing.Compiled{timing.CalendarKey("pay", "biz"): weekdays(t)}}
	for _, tc := range []struct {
		name string
		s    timing.Schedule
		want time.Time
	}{
		{"the namespace's window", timing.Schedule{Key: "pay~a", Crons: []string{"0 0 * * * ?"}},
			t0.Add(cron.Offset("pay~a", time.Hour))},
		{"its own window", timing.Schedule{Key: "pay~a", Crons: []string{"0 0 * * * ?"}, Jitter: "0s"}, t0.Add(time.Hour)},
		{"the scheduler-wide window", timing.Schedule{Key: "ops~a", Crons: []string{"0 0 * * * ?"}},
			t0.Add(cron.Offset("ops~a", time.Minute))},
		{"its calendar", timing.Schedule{Key: "pay~b", Crons: []string{"0 0 9 * * ?"}, Jitter: "0s", Calendar: "biz"},
			time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)},
	} {
		got, ok := in.Next(tc.s, nil, t0)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%s: next %s (%v), want %s", tc.name, got, ok, tc.want)
		}
	}
}

// A calendar the inputs do not hold plans nothing, and says so: another
// namespace's calendar of that name is not the source's.
func TestInputsPlanMissingCalendar(t *testing.T) {
	in := timing.Inputs{Calendars: map[string]timing.Compiled{timing.CalendarKey("ops", "biz"): weekdays(t)}}
	_, _, err := in.Plan(timing.Schedule{Key: "pay~a", Crons: []string{"0 0 9 * * ?"}, Calendar: "biz"}, nil)
	if !errors.Is(err, timing.ErrCalendarNotFound) {
		t.Fatalf("err %v, want ErrCalendarNotFound", err)
	}
}

// Two reads of the same calendars and windows are equal; a changed source
// or window is not.
func TestInputsEqual(t *testing.T) {
	a := timing.Inputs{Wide: time.Minute, Jitters: map[string]time.Duration{"pay": time.Hour},
		Calendars: map[string]timing.Compiled{"pay/biz": weekdays(t)}}
	b := timing.Inputs{Wide: time.Minute, Jitters: map[string]time.Duration{"pay": time.Hour},
		Calendars: map[string]timing.Compiled{"pay/biz": weekdays(t)}}
	if !a.Equal(b) {
		t.Fatal("two reads of the same inputs differ")
	}
	b.Calendars["pay/biz"] = timing.Compiled{Source: "changed"}
	if a.Equal(b) {
		t.Fatal("a changed calendar is equal")
	}
	b = a
	b.Jitters = map[string]time.Duration{"pay": time.Minute}
	if a.Equal(b) {
		t.Fatal("a changed window is equal")
	}
}

// The schedule's own checks name the field, for the caller to mark as
// its own kind of invalid.
func TestScheduleChecks(t *testing.T) {
	for _, tc := range []struct {
		s    timing.Schedule
		want string
	}{
		{timing.Schedule{Jitter: "25h", Crons: []string{"0 * * * * ?"}}, `jitter "25h" must be a duration from 0s to 24h0m0s, such as 30m or 90s`},
		{timing.Schedule{Calendar: "Bad Name", Crons: []string{"0 * * * * ?"}}, "calendar: "},
	} {
		if err := tc.s.Check(); err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%+v: %v, want %q…", tc.s, err, tc.want)
		}
	}
	if !(timing.Schedule{Jitter: "1m"}).Orphaned() {
		t.Error("a jitter without a cron is not reported")
	}
	var ce *timing.CronError
	if err := (timing.Schedule{Crons: []string{"0 * * * * ?", "nonsense"}}).CheckFires(t0, time.UTC); !errors.As(err, &ce) || ce.Index != 1 {
		t.Errorf("a bad second cron: %v", err)
	}
}

func ExampleInputs_Plan() {
	in := timing.Inputs{Zone: time.UTC}
	s := timing.Schedule{Key: "nightly", Crons: []string{"0 30 2 * * ?"}, Zone: "Europe/Berlin"}
	p, loc, _ := in.Plan(s, nil)
	fmt.Println(p.Next(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), loc).UTC())
	// Output: 2026-11-21 01:30:00 +0000 UTC
}
