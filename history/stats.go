package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

// Statistics tables.
const (
	taskRunningTable = "TASK_RUNNING_STATISTICS"
	jobRunningTable  = "JOB_RUNNING_STATISTICS"
	registerTable    = "JOB_REGISTER_STATISTICS"
)

func resultTable(iv view.Interval) string { return "TASK_RESULT_STATISTICS_" + string(iv) }

// point is a statistics row: a and b are the counts (success and failed,
// or the running or registered count and 0).
type point struct {
	id       int64
	a, b     int
	at, made time.Time
}

// points reads the rows of table in [first, last], keyed by their interval
// start. Duplicate rows of one interval (left by other tools) are summed
// when sum is set, otherwise the newest wins.
func (s *Store) points(ctx context.Context, table, counts, ns string, first, last time.Time, iv view.Interval, sum bool) (map[time.Time]point, error) {
	q := "SELECT id, " + counts + ", statistics_time, creation_time FROM " + table +
		" WHERE statistics_time >= ? AND statistics_time <= ? AND namespace = ? ORDER BY statistics_time, id"
	rows, err := s.db.QueryContext(ctx, q, s.d.bindTime(first), s.d.bindTime(last), ns)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", table, err)
	}
	defer rows.Close()
	out := map[time.Time]point{}
	for rows.Next() {
		var p point
		var a, b sql.NullInt64
		var at, made dbTime
		dest := []any{&p.id, &a}
		if counts != "running_count" && counts != "registered_count" {
			dest = append(dest, &b)
		}
		if err := rows.Scan(append(dest, &at, &made)...); err != nil {
			return nil, fmt.Errorf("history: read %s: %w", table, err)
		}
		p.a, p.b, p.at, p.made = int(a.Int64), int(b.Int64), floor(at.T, iv, s.loc), made.T
		if old, ok := out[p.at]; ok && sum {
			old.a += p.a
			old.b += p.b
			p = old
		}
		out[p.at] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read %s: %w", table, err)
	}
	return out, nil
}

func unknownSince(since view.Since, allowed string) error {
	return badQuery("since must be %s, got %q", allowed, since)
}

// TaskResults is GET /job/statistics/tasks/results?since=…: last24hours is
// the 1440 minutes before the current one; lastWeek the 168 hours up to and
// including the current one, whose row (like that of an ended hour not
// aggregated yet) sums the minutes flushed so far. Missing intervals are
// zero rows. No since gives an empty list, as in the original.
//
// The week chart used to end with the hour before the current one: for the
// first hour after a start (and the first minutes of every hour) it showed
// nothing of what the minute chart and the totals counted.
func (s *Store) TaskResults(ctx context.Context, ns string, since view.Since) ([]view.TaskResult, error) {
	var iv view.Interval
	var n int
	now := s.clock.Now()
	last := prev(floor(now, view.Minute, s.loc), view.Minute, s.loc)
	switch since {
	case "":
		return []view.TaskResult{}, nil
	case view.Last24Hours:
		iv, n = view.Minute, 24*60
	case view.LastWeek:
		iv, n = view.Hour, 7*24
		last = floor(now, iv, s.loc)
	default:
		return nil, unknownSince(since, "last24hours or lastWeek")
	}
	first := last.Add(-time.Duration(n-1) * iv.Step())
	got, err := s.points(ctx, resultTable(iv), "success_count, failed_count", ns, first, last, iv, true)
	if err != nil {
		return nil, err
	}
	if iv == view.Hour {
		if err := s.unaggregatedHours(ctx, ns, got, prev(last, iv, s.loc), now); err != nil {
			return nil, err
		}
	}
	out := make([]view.TaskResult, 0, n)
	for _, t := range span(first, last, iv, s.loc) {
		out = append(out, resultOf(got, t, iv))
	}
	return out, nil
}

// unaggregatedHours adds to got, for the hours from `from` to now that the
// HOUR table has no row for yet (the current one, and one that just ended
// before the collector aggregated it), the sum of their flushed minutes.
func (s *Store) unaggregatedHours(ctx context.Context, ns string, got map[time.Time]point, from, now time.Time) error {
	minutes, err := s.points(ctx, resultTable(view.Minute), "success_count, failed_count", ns, from, now, view.Minute, true)
	if err != nil {
		return err
	}
	hours := map[time.Time]point{}
	for t, m := range minutes {
		h := floor(t, view.Hour, s.loc)
		if _, aggregated := got[h]; aggregated {
			continue
		}
		p := hours[h]
		p.a, p.b, p.at, p.made = p.a+m.a, p.b+m.b, h, now.UTC()
		hours[h] = p
	}
	for h, p := range hours {
		got[h] = p
	}
	return nil
}

func resultOf(got map[time.Time]point, t time.Time, iv view.Interval) view.TaskResult {
	p, ok := got[t]
	if !ok {
		return view.TaskResult{StatisticInterval: iv, StatisticsTime: t, CreationTime: t}
	}
	return view.TaskResult{ID: p.id, SuccessCount: p.a, FailedCount: p.b, StatisticInterval: iv, StatisticsTime: t, CreationTime: p.made}
}

// TaskResultSummary is GET /job/statistics/tasks/results/{period}:
// lastMinute is the last complete minute (zero when nothing ran), lastHour
// the 60 minutes up to the end of that minute (summed from the MINUTE
// table, its statisticsTime their start), lastWeek sums the 7 days before
// today and today so far, online sums everything; both sums count up to
// the last flushed minute.
//
// lastHour used to be the last complete clock hour: for the first hour
// after a start, and at every hour's start, it read 0 beside a lastMinute
// of 8. A sliding hour always holds the last minute.
func (s *Store) TaskResultSummary(ctx context.Context, ns string, period view.Since) (view.TaskResult, error) {
	now := s.clock.Now().UTC()
	switch period {
	case view.LastMinute:
		t := prev(floor(now, view.Minute, s.loc), view.Minute, s.loc)
		got, err := s.points(ctx, resultTable(view.Minute), "success_count, failed_count", ns, t, t, view.Minute, true)
		if err != nil {
			return view.TaskResult{}, err
		}
		return resultOf(got, t, view.Minute), nil
	case view.LastHour:
		to := floor(now, view.Minute, s.loc)
		from := to.Add(-time.Hour)
		a, b, err := s.sum(ctx, ns, view.Minute, from, to)
		if err != nil {
			return view.TaskResult{}, err
		}
		return view.TaskResult{SuccessCount: a, FailedCount: b, StatisticInterval: view.Hour, StatisticsTime: from, CreationTime: now}, nil
	case view.LastWeek, view.Online:
		from := time.Time{}
		sum := s.sumSince
		switch {
		case period == view.LastWeek:
			from = floor(now, view.Day, s.loc).AddDate(0, 0, -7)
		case !s.start.IsZero():
			from, sum = floor(s.start, view.Minute, s.loc), s.sumFromStart
		}
		a, b, err := sum(ctx, ns, from, now)
		if err != nil {
			return view.TaskResult{}, err
		}
		return view.TaskResult{SuccessCount: a, FailedCount: b, StatisticInterval: view.Day, StatisticsTime: now, CreationTime: now}, nil
	}
	return view.TaskResult{}, badQuery("period must be online, lastWeek, lastHour or lastMinute, got %q", period)
}

// sumSince sums the results from `from` on: whole days from the DAY table,
// today's complete hours from the HOUR table, this hour from the MINUTE
// table.
func (s *Store) sumSince(ctx context.Context, ns string, from, now time.Time) (int, int, error) {
	today, hour := floor(now, view.Day, s.loc), floor(now, view.Hour, s.loc)
	parts := []struct {
		iv       view.Interval
		from, to time.Time
	}{
		{view.Day, from, today},
		{view.Hour, later(from, today), hour},
		{view.Minute, later(from, hour), time.Time{}},
	}
	var a, b int
	for _, p := range parts {
		x, y, err := s.sum(ctx, ns, p.iv, p.from, p.to)
		if err != nil {
			return 0, 0, err
		}
		a, b = a+x, b+y
	}
	return a, b, nil
}

// sumFromStart sums the results from the minute at from (the
// scheduler's start): the rest of that hour from the MINUTE table, then
// from the next hour on as sumFromHour. It counted from the start's clock
// hour, runs from before a restart minutes ago included.
func (s *Store) sumFromStart(ctx context.Context, ns string, from, now time.Time) (int, int, error) {
	nextHour := next(floor(from, view.Hour, s.loc), view.Hour, s.loc)
	if nextHour.After(now) {
		return s.sum(ctx, ns, view.Minute, from, time.Time{})
	}
	a, b, err := s.sum(ctx, ns, view.Minute, from, nextHour)
	if err != nil {
		return 0, 0, err
	}
	x, y, err := s.sumFromHour(ctx, ns, nextHour, now)
	return a + x, b + y, err
}

// sumFromHour sums the results from the hour starting at from: that
// day's hours from the HOUR table, later whole days from the DAY table,
// today's complete hours from the HOUR table, this hour from the MINUTE
// table.
func (s *Store) sumFromHour(ctx context.Context, ns string, from, now time.Time) (int, int, error) {
	today, hour := floor(now, view.Day, s.loc), floor(now, view.Hour, s.loc)
	nextDay := next(floor(from, view.Day, s.loc), view.Day, s.loc)
	parts := []struct {
		iv       view.Interval
		from, to time.Time
	}{
		{view.Hour, from, earlier(nextDay, hour)},
		{view.Day, nextDay, today},
		{view.Hour, later(nextDay, today), hour},
		{view.Minute, later(from, hour), time.Time{}},
	}
	var a, b int
	for _, p := range parts {
		if !p.to.IsZero() && !p.to.After(p.from) {
			continue
		}
		x, y, err := s.sum(ctx, ns, p.iv, p.from, p.to)
		if err != nil {
			return 0, 0, err
		}
		a, b = a+x, b+y
	}
	return a, b, nil
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sum adds the results of one table in [from, to); zero bounds are open.
func (s *Store) sum(ctx context.Context, ns string, iv view.Interval, from, to time.Time) (int, int, error) {
	q := "SELECT COALESCE(SUM(success_count), 0), COALESCE(SUM(failed_count), 0) FROM " + resultTable(iv) + " WHERE namespace = ?"
	args := []any{ns}
	if !from.IsZero() {
		q += " AND statistics_time >= ?"
		args = append(args, s.d.bindTime(from))
	}
	if !to.IsZero() {
		q += " AND statistics_time < ?"
		args = append(args, s.d.bindTime(to))
	}
	var a, b int64
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&a, &b); err != nil {
		return 0, 0, fmt.Errorf("history: sum %s: %w", resultTable(iv), err)
	}
	return int(a), int(b), nil
}

// TaskRunning is GET /job/statistics/tasks/running?since=lastWeek: one row
// per minute of the last week up to the current minute (its row once
// written); missing minutes are zero rows. No since gives an empty list.
func (s *Store) TaskRunning(ctx context.Context, ns string, since view.Since) ([]view.Running, error) {
	return s.running(ctx, taskRunningTable, ns, since)
}

// JobRunning is GET /job/statistics/jobs/running?since=lastWeek, as
// TaskRunning for the number of jobs with running tasks.
func (s *Store) JobRunning(ctx context.Context, ns string, since view.Since) ([]view.Running, error) {
	return s.running(ctx, jobRunningTable, ns, since)
}

func (s *Store) running(ctx context.Context, table, ns string, since view.Since) ([]view.Running, error) {
	switch since {
	case "":
		return []view.Running{}, nil
	case view.LastWeek:
	default:
		return nil, unknownSince(since, "lastWeek")
	}
	last := floor(s.clock.Now(), view.Minute, s.loc)
	first := last.Add(-(7*24*60 - 1) * time.Minute)
	got, err := s.points(ctx, table, "running_count", ns, first, last, view.Minute, false)
	if err != nil {
		return nil, err
	}
	if _, ok := got[last]; !ok {
		last = last.Add(-time.Minute) // this minute's snapshot is not written yet
	}
	out := make([]view.Running, 0, 7*24*60)
	for _, t := range span(first, last, view.Minute, s.loc) {
		p, ok := got[t]
		if !ok {
			p = point{at: t, made: t}
		}
		out = append(out, view.Running{ID: p.id, RunningCount: p.a, StatisticsTime: t, CreationTime: p.made})
	}
	return out, nil
}

// JobRegistered is GET /job/statistics/jobs/register: one row per day from
// the first recorded day to today. A day without a row carries the count of
// the day before (the jobs stayed registered while no leader counted them).
func (s *Store) JobRegistered(ctx context.Context, ns string) ([]view.Registered, error) {
	var first dbTime
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(statistics_time) FROM "+registerTable+" WHERE namespace = ?", ns).Scan(&first); err != nil {
		return nil, fmt.Errorf("history: read %s: %w", registerTable, err)
	}
	out := []view.Registered{}
	if !first.Valid {
		return out, nil
	}
	start, today := floor(first.T, view.Day, s.loc), floor(s.clock.Now(), view.Day, s.loc)
	got, err := s.points(ctx, registerTable, "registered_count", ns, start, next(today, view.Day, s.loc).Add(-time.Nanosecond), view.Day, false)
	if err != nil {
		return nil, err
	}
	carry := 0
	for _, t := range span(start, today, view.Day, s.loc) {
		r := view.Registered{RegisteredCount: carry, StatisticsTime: t, CreationTime: t}
		if p, ok := got[t]; ok {
			r = view.Registered{ID: p.id, RegisteredCount: p.a, StatisticsTime: t, CreationTime: p.made}
		}
		carry = r.RegisteredCount
		out = append(out, r)
	}
	return out, nil
}
