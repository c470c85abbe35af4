package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ejcloud/elasticjob/migrations"
)

// maxRetentionStatements bounds the DELETEs per table per pass, so one
// pass never holds the writer long; the next pass continues.
const maxRetentionStatements = 50

// retained is a table and the time column retention orders it by.
type retained struct {
	table, col string
	orphanCol  string // rows with col NULL are aged by this column
}

var retainedTables = func() []retained {
	r := []retained{
		{migrations.TableJobExecutionLog, "start_time", "complete_time"},
		{migrations.TableJobStatusTraceLog, "creation_time", ""},
		{migrations.TableAuditLog, "creation_time", ""},
		{migrations.TableWorkflowRunLog, "created_time", ""},
		{migrations.TableWorkflowNodeLog, "end_time", "queued_time"},
	}
	for _, t := range migrations.StatisticsTables {
		r = append(r, retained{t, "statistics_time", ""})
	}
	return r
}()

// Retain runs one retention pass: in every history and statistics table
// it deletes rows older than MaxAge, then the oldest rows beyond MaxRows,
// RetentionBatch rows per statement and a bounded number of statements.
// It returns the rows deleted. The writer runs it every
// RetentionInterval; tests call it directly.
func (w *Writer) Retain(ctx context.Context) (int64, error) {
	if !w.ready.Load() {
		return 0, ErrUnavailable
	}
	var total int64
	for _, t := range retainedTables {
		n, err := w.retainTable(ctx, t)
		total += n
		if err != nil {
			w.m.retained.Add(float64(total))
			return total, err
		}
	}
	w.m.retained.Add(float64(total))
	return total, nil
}

func (w *Writer) retainTable(ctx context.Context, t retained) (int64, error) {
	var total int64
	budget := maxRetentionStatements
	batch := w.opt.RetentionBatch
	mysql := w.opt.Dialect == dialectMySQL
	if w.opt.MaxAge > 0 {
		cutoff := timeArg(w.opt.Dialect, w.opt.Clock.Now().Add(-w.opt.MaxAge))
		where := t.col + " < ?"
		args := []any{cutoff}
		if t.orphanCol != "" {
			where = "(" + where + " OR (" + t.col + " IS NULL AND " + t.orphanCol + " < ?))"
			args = append(args, cutoff)
		}
		q := "DELETE FROM " + t.table + " WHERE rowid IN (SELECT rowid FROM " + t.table + " WHERE " + where + " LIMIT ?)"
		if mysql {
			q = "DELETE FROM " + t.table + " WHERE " + where + " LIMIT ?"
		}
		for ; budget > 0; budget-- {
			n, err := w.exec(ctx, q, append(args, batch)...)
			total += n
			if err != nil {
				return total, err
			}
			if n < int64(batch) {
				break
			}
		}
	}
	if w.opt.MaxRows > 0 && budget > 0 {
		var count int64
		cctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
		err := w.db.QueryRowContext(cctx, "SELECT COUNT(*) FROM "+t.table).Scan(&count)
		cancel()
		if err != nil {
			return total, fmt.Errorf("trace: retention count %s: %w", t.table, err)
		}
		order := t.col + ", id"
		q := "DELETE FROM " + t.table + " WHERE rowid IN (SELECT rowid FROM " + t.table + " ORDER BY " + order + " LIMIT ?)"
		if mysql {
			q = "DELETE FROM " + t.table + " ORDER BY " + order + " LIMIT ?"
		}
		for excess := count - w.opt.MaxRows; excess > 0 && budget > 0; budget-- {
			n, err := w.exec(ctx, q, min(excess, int64(batch)))
			total += n
			excess -= n
			if err != nil {
				return total, err
			}
			if n == 0 {
				break
			}
		}
	}
	return total, nil
}

func (w *Writer) exec(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
	defer cancel()
	res, err := w.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("trace: retention: %w", err)
	}
	return res.RowsAffected()
}

func (w *Writer) retainScheduled(ctx context.Context) {
	n, err := w.Retain(ctx)
	if err != nil {
		w.log.Warn("trace: retention", "err", err, "deleted", n)
	} else if n > 0 {
		w.log.Info("trace: retention deleted old history", "rows", n)
	}
	if w.retentionHook != nil {
		w.retentionHook()
	}
}

// reject sets aside an event the database refused for its data.
func (w *Writer) reject(ev Event, cause error) {
	w.m.failed.Inc()
	w.log.Error("trace: event refused by the database, set aside in rejected.jsonl", "id", ev.EventID(), "err", cause)
	line, err := encodeEvent(ev)
	if err != nil {
		return
	}
	rec, _ := json.Marshal(map[string]any{"error": cause.Error(), "event": json.RawMessage(line)})
	f, err := os.OpenFile(filepath.Join(w.opt.SpoolDir, "rejected.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(rec, '\n'))
}
