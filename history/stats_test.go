package history

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

func (e *testDB) putResult(t *testing.T, iv view.Interval, at time.Time, ok, failed int) {
	t.Helper()
	e.exec(t, "INSERT INTO "+resultTable(iv)+" (success_count, failed_count, statistics_time, creation_time) VALUES (?, ?, ?, ?)",
		ok, failed, e.d.bindTime(at), e.d.bindTime(at.Add(time.Minute)))
}

func TestTaskResultSeriesAndSummaries(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		e.clock.Set(at(12, 30).Add(15 * time.Second))
		e.putResult(t, view.Minute, at(12, 29), 5, 1) // the last complete minute
		e.putResult(t, view.Minute, at(12, 10), 2, 0) // this hour
		e.putResult(t, view.Minute, at(12, 30), 7, 7) // the current minute: not in the series
		e.putResult(t, view.Minute, at(11, 59), 1, 1) // aggregated below
		e.putResult(t, view.Hour, at(11, 0), 10, 2)   // the last complete hour
		e.putResult(t, view.Hour, at(3, 0), 4, 0)     // earlier today
		e.putResult(t, view.Day, at(0, 0).AddDate(0, 0, -1), 100, 9)
		e.putResult(t, view.Day, at(0, 0).AddDate(0, 0, -30), 1000, 90)

		day, err := e.store.TaskResults(ctx, "default", view.Last24Hours)
		if err != nil {
			t.Fatal(err)
		}
		first, last := day[0], day[len(day)-1]
		if len(day) != 1440 || !last.StatisticsTime.Equal(at(12, 29)) || last.SuccessCount != 5 || last.FailedCount != 1 || last.ID == 0 ||
			!first.StatisticsTime.Equal(at(12, 29).Add(-1439*time.Minute)) || first.ID != 0 || first.SuccessCount != 0 || first.StatisticInterval != view.Minute {
			t.Fatalf("last24hours: %d rows, first %+v, last %+v", len(day), first, last)
		}
		if gap := day[len(day)-2]; gap.SuccessCount != 0 || !gap.StatisticsTime.Equal(at(12, 28)) {
			t.Errorf("gap row %+v", gap)
		}
		week, err := e.store.TaskResults(ctx, "default", view.LastWeek)
		if err != nil {
			t.Fatal(err)
		}
		// The week ends with the current hour, summed from its minutes so far;
		// the hour before it comes from the HOUR table.
		if len(week) != 168 || !week[167].StatisticsTime.Equal(at(12, 0)) || week[167].SuccessCount != 2+5+7 || week[167].FailedCount != 1+7 ||
			week[167].StatisticInterval != view.Hour || week[167].ID != 0 {
			t.Errorf("lastWeek: %d rows, last %+v", len(week), week[167])
		}
		if w := week[166]; !w.StatisticsTime.Equal(at(11, 0)) || w.SuccessCount != 10 || w.FailedCount != 2 || w.ID == 0 {
			t.Errorf("lastWeek: the last complete hour %+v", w)
		}
		if none, err := e.store.TaskResults(ctx, "default", ""); err != nil || none == nil || len(none) != 0 {
			t.Errorf("no since: %v %v, want []", none, err)
		}
		if _, err := e.store.TaskResults(ctx, "default", "lastYear"); !errors.Is(err, view.ErrBadQuery) {
			t.Errorf("since=lastYear: %v", err)
		}

		sum := func(p view.Since) view.TaskResult {
			r, err := e.store.TaskResultSummary(ctx, "default", p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return r
		}
		if r := sum(view.LastMinute); r.SuccessCount != 5 || r.FailedCount != 1 || !r.StatisticsTime.Equal(at(12, 29)) || r.StatisticInterval != view.Minute {
			t.Errorf("lastMinute %+v", r)
		}
		// The 60 minutes up to the last complete one: 11:30 to 12:29.
		if r := sum(view.LastHour); r.SuccessCount != 5+2+1 || r.FailedCount != 1+0+1 || !r.StatisticsTime.Equal(at(11, 30)) || r.StatisticInterval != view.Hour {
			t.Errorf("lastHour %+v", r)
		}
		// Days before today + today's hours + this hour's minutes.
		if r := sum(view.LastWeek); r.SuccessCount != 100+10+4+5+2+7 || r.FailedCount != 9+2+1+7 || r.StatisticInterval != view.Day {
			t.Errorf("lastWeek %+v", r)
		}
		if r := sum(view.Online); r.SuccessCount != 1000+100+10+4+5+2+7 {
			t.Errorf("online %+v", r)
		}
		if _, err := e.store.TaskResultSummary(ctx, "default", "forever"); !errors.Is(err, view.ErrBadQuery) {
			t.Errorf("period forever: %v", err)
		}
		// An hour that ended but is not aggregated yet is summed from its
		// minutes in the week; so is the new current hour (none yet).
		e.clock.Set(at(13, 0).Add(5 * time.Second))
		if r := sum(view.LastHour); r.SuccessCount != 5+2+7 || !r.StatisticsTime.Equal(at(12, 0)) {
			t.Errorf("lastHour at 13:00 %+v", r)
		}
		week, err = e.store.TaskResults(ctx, "default", view.LastWeek)
		if err != nil {
			t.Fatal(err)
		}
		if w, now := week[166], week[167]; !w.StatisticsTime.Equal(at(12, 0)) || w.SuccessCount != 14 || w.FailedCount != 8 ||
			!now.StatisticsTime.Equal(at(13, 0)) || now.SuccessCount != 0 {
			t.Errorf("lastWeek at 13:00: %+v, %+v", w, now)
		}
	})
}

func TestStatisticsEmpty(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		regs, err := e.store.JobRegistered(ctx, "default")
		if err != nil || regs == nil || len(regs) != 0 {
			t.Errorf("register: %v %v", regs, err)
		}
		r, err := e.store.TaskResultSummary(ctx, "default", view.Online)
		if err != nil || r.SuccessCount != 0 || r.FailedCount != 0 {
			t.Errorf("online: %+v %v", r, err)
		}
		run, err := e.store.TaskRunning(ctx, "default", view.LastWeek)
		if err != nil || len(run) != 7*24*60-1 || run[0].RunningCount != 0 {
			t.Errorf("running: %d rows %v", len(run), err)
		}
		if _, err := e.store.JobRunning(ctx, "default", "last24hours"); !errors.Is(err, view.ErrBadQuery) {
			t.Errorf("jobs running since=last24hours: %v", err)
		}
	})
}

func TestNewRejectsUnknownDialect(t *testing.T) {
	if _, err := New(nil, "postgres", Options{}); err == nil {
		t.Fatal("postgres accepted")
	}
}

func TestDBTimeScan(t *testing.T) {
	want := time.Date(2024, 3, 1, 12, 0, 0, 123e6, time.UTC)
	for _, src := range []any{want, want.In(time.FixedZone("x", 3600)), "2024-03-01 12:00:00.123", []byte("2024-03-01 12:00:00.123"),
		"2024-03-01T12:00:00.123Z", "2024-03-01 13:00:00.123+01:00"} {
		var d dbTime
		if err := d.Scan(src); err != nil || !d.Valid || !d.T.Equal(want) {
			t.Errorf("Scan(%v) = %v %v", src, d, err)
		}
	}
	var d dbTime
	if err := d.Scan(nil); err != nil || d.Valid || d.ptr() != nil {
		t.Errorf("Scan(nil) = %v %v", d, err)
	}
	if err := d.Scan("yesterday"); err == nil {
		t.Error("Scan(yesterday) accepted")
	}
}

// TestDashboardFiguresAgreeAfterAStart is the trial's dashboard: a
// scheduler started at 12:30 ran 8 tasks in its first minute and 12 in its
// second, and the console showed "Last minute 12" beside "Last hour 0" and
// an empty week chart while "online" counted 20: the hour figures ended
// with the last complete clock hour (11:00), before anything ran. Through
// the collector (the real write path), every figure now counts what ran.
func TestDashboardFiguresAgreeAfterAStart(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		e.clock.Set(at(12, 30).Add(8 * time.Second))
		l := startCollector(t, e, RegistryOf(newRegistry(t)))
		ok := func(n int) {
			for range n {
				l.status("TASK_FINISHED")
			}
		}
		ok(8)
		l.to(at(12, 31).Add(5 * time.Second))
		ok(12)
		l.to(at(12, 32).Add(9 * time.Second))

		sum := func(p view.Since) int {
			r, err := e.store.TaskResultSummary(ctx, "default", p)
			if err != nil {
				t.Fatal(err)
			}
			return r.SuccessCount
		}
		if m, h, w, o := sum(view.LastMinute), sum(view.LastHour), sum(view.LastWeek), sum(view.Online); m != 12 || h != 20 || w != 20 || o != 20 {
			t.Errorf("last minute %d, last hour %d, last week %d, online %d; want 12, 20, 20, 20", m, h, w, o)
		}
		total := func(since view.Since) int {
			rows, err := e.store.TaskResults(ctx, "default", since)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range rows {
				n += r.SuccessCount
			}
			return n
		}
		if d, w := total(view.Last24Hours), total(view.LastWeek); d != 20 || w != 20 {
			t.Errorf("the day chart counts %d, the week chart %d; want 20 each", d, w)
		}
		// An hour later nothing ran: the sliding hour is empty, the charts keep it.
		l.to(at(13, 33))
		if h := sum(view.LastHour); h != 0 {
			t.Errorf("last hour at 13:33: %d, want 0", h)
		}
		if w := total(view.LastWeek); w != 20 {
			t.Errorf("the week chart at 13:33 counts %d, want 20", w)
		}
	})
}

// "online" is since the scheduler started (from the minute it started:
// issue 57 item 8 saw 16 runs from before a restart 2 minutes ago counted,
// the start's whole clock hour), not every result ever kept: the
// console's dashboard said "since the scheduler started" over all-time
// totals (issue 42).
func TestOnlineCountsSinceTheSchedulerStarted(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		e.clock.Set(at(12, 30).Add(15 * time.Second))
		e.putResult(t, view.Day, at(0, 0).AddDate(0, 0, -3), 1000, 90) // before the start
		e.putResult(t, view.Hour, at(9, 0).AddDate(0, 0, -2), 50, 5)   // before the start's hour
		e.putResult(t, view.Hour, at(10, 0).AddDate(0, 0, -2), 40, 4)  // the start's hour: 37 before the start, 3 after
		e.putResult(t, view.Minute, at(10, 10).AddDate(0, 0, -2), 37, 4)
		e.putResult(t, view.Minute, at(10, 25).AddDate(0, 0, -2), 3, 0)
		e.putResult(t, view.Hour, at(23, 0).AddDate(0, 0, -2), 30, 3) // the start's day
		e.putResult(t, view.Day, at(0, 0).AddDate(0, 0, -1), 100, 9)  // a whole day since
		e.putResult(t, view.Hour, at(11, 0), 10, 2)                   // today
		e.putResult(t, view.Minute, at(12, 10), 2, 0)                 // this hour
		started, err := New(e.db, e.name, Options{Clock: e.clock, Location: time.UTC, Started: at(10, 20).AddDate(0, 0, -2)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := started.TaskResultSummary(ctx, "default", view.Online)
		if err != nil || r.SuccessCount != 3+30+100+10+2 || r.FailedCount != 0+3+9+2 {
			t.Errorf("online since the start: %+v %v", r, err)
		}
		// Started this hour: this hour's minutes since the start only.
		recent, err := New(e.db, e.name, Options{Clock: e.clock, Location: time.UTC, Started: at(12, 5)})
		if err != nil {
			t.Fatal(err)
		}
		e.putResult(t, view.Minute, at(12, 1), 16, 0) // before a restart at 12:05
		if r, err := recent.TaskResultSummary(ctx, "default", view.Online); err != nil || r.SuccessCount != 2 {
			t.Errorf("online since 12:05: %+v %v, want the 2 of 12:10", r, err)
		}
		all, err := e.store.TaskResultSummary(ctx, "default", view.Online) // no start known: everything
		if err != nil || all.SuccessCount != 1000+100+10+2+16 {            // past days from the DAY table
			t.Errorf("online without a start: %+v %v", all, err)
		}
	})
}
