package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

// addResult adds one namespace's counts of one minute to
// TASK_RESULT_STATISTICS_MINUTE, creating the row if it has none. n is
// never zero, so an existing row is always changed (MySQL reports changed
// rows, not matched ones).
func (s *Store) addResult(ctx context.Context, ns string, minute time.Time, n counts, now time.Time) error {
	table := resultTable(view.Minute)
	res, err := s.db.ExecContext(ctx, "UPDATE "+table+" SET success_count = success_count + ?, failed_count = failed_count + ? WHERE statistics_time = ? AND namespace = ?",
		n.success, n.failed, s.d.bindTime(minute), ns)
	if err != nil {
		return fmt.Errorf("history: update %s: %w", table, err)
	}
	if k, err := res.RowsAffected(); err == nil && k > 0 {
		return nil
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO "+table+" (success_count, failed_count, statistics_time, creation_time, namespace) VALUES (?, ?, ?, ?, ?)",
		n.success, n.failed, s.d.bindTime(minute), s.d.bindTime(now), ns)
	if err != nil {
		return fmt.Errorf("history: insert %s: %w", table, err)
	}
	return nil
}

// rowAt returns the id of a namespace's row of table at t (0 when there
// is none).
func rowAt(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table, ns string, t any) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, "SELECT id FROM "+table+" WHERE statistics_time = ? AND namespace = ? ORDER BY id LIMIT 1", t, ns).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("history: read %s: %w", table, err)
	}
	return id, nil
}

// putOnce writes a namespace's snapshot row (running or registered count)
// at t unless the table already has one.
func (s *Store) putOnce(ctx context.Context, table, col, ns string, t time.Time, n int, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: write %s: %w", table, err)
	}
	defer tx.Rollback()
	id, err := rowAt(ctx, tx, table, ns, s.d.bindTime(t))
	if err != nil || id != 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" ("+col+", statistics_time, creation_time, namespace) VALUES (?, ?, ?, ?)",
		n, s.d.bindTime(t), s.d.bindTime(now), ns); err != nil {
		return fmt.Errorf("history: insert %s: %w", table, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: write %s: %w", table, err)
	}
	return nil
}

// rollUp sets each namespace's iv row at t to the sum of its finer rows in
// the span, if it has any; run twice, it writes the same rows.
func (s *Store) rollUp(ctx context.Context, iv, finer view.Interval, t, now time.Time) error {
	src := resultTable(finer)
	end := next(t, iv, s.loc)
	rows, err := s.db.QueryContext(ctx, "SELECT namespace, COALESCE(SUM(success_count), 0), COALESCE(SUM(failed_count), 0) FROM "+src+
		" WHERE statistics_time >= ? AND statistics_time < ? GROUP BY namespace", s.d.bindTime(t), s.d.bindTime(end))
	if err != nil {
		return fmt.Errorf("history: sum %s: %w", src, err)
	}
	type sums struct {
		ns   string
		a, b int64
	}
	var all []sums
	for rows.Next() {
		var x sums
		if err := rows.Scan(&x.ns, &x.a, &x.b); err != nil {
			rows.Close()
			return fmt.Errorf("history: sum %s: %w", src, err)
		}
		all = append(all, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("history: sum %s: %w", src, err)
	}
	for _, x := range all {
		if err := s.putSum(ctx, iv, x.ns, t, x.a, x.b, now); err != nil {
			return err
		}
	}
	return nil
}

// putSum writes a namespace's iv row at t.
func (s *Store) putSum(ctx context.Context, iv view.Interval, ns string, t time.Time, a, b int64, now time.Time) error {
	dst := resultTable(iv)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: write %s: %w", dst, err)
	}
	defer tx.Rollback()
	id, err := rowAt(ctx, tx, dst, ns, s.d.bindTime(t))
	if err != nil {
		return err
	}
	if id != 0 {
		_, err = tx.ExecContext(ctx, "UPDATE "+dst+" SET success_count = ?, failed_count = ? WHERE id = ?", a, b, id)
	} else {
		_, err = tx.ExecContext(ctx, "INSERT INTO "+dst+" (success_count, failed_count, statistics_time, creation_time, namespace) VALUES (?, ?, ?, ?, ?)",
			a, b, s.d.bindTime(t), s.d.bindTime(now), ns)
	}
	if err != nil {
		return fmt.Errorf("history: write %s: %w", dst, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: write %s: %w", dst, err)
	}
	return nil
}

// resumePoint is the first iv interval a starting collector aggregates:
// the newest iv row (recomputed), else the interval of the oldest finer
// row, else now's interval; never before limit.
func (s *Store) resumePoint(ctx context.Context, iv view.Interval, limit, now time.Time) (time.Time, error) {
	finer := view.Minute
	if iv == view.Day {
		finer = view.Hour
	}
	var last, first dbTime
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(statistics_time) FROM "+resultTable(iv)).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("history: read %s: %w", resultTable(iv), err)
	}
	t := floor(last.T, iv, s.loc)
	if !last.Valid {
		if err := s.db.QueryRowContext(ctx, "SELECT MIN(statistics_time) FROM "+resultTable(finer)).Scan(&first); err != nil {
			return time.Time{}, fmt.Errorf("history: read %s: %w", resultTable(finer), err)
		}
		t = floor(now, iv, s.loc)
		if first.Valid {
			t = floor(first.T, iv, s.loc)
		}
	}
	return later(t, limit), nil
}
