package replog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/task"
)

// Task results statistics on every replica. The leader's collector
// counts task results as its scheduler observes them and writes them to
// its own database; replicas would have none. With CountResults, each
// replica counts instead, as it applies the log, the tasks that the
// batch's new status traces end (FINISHED a success, a failure state a
// failure, KILLED neither, as the collector counts), in the transaction
// that inserts those traces: a trace already in the database (a batch
// published or applied twice) is not counted again, so every replica
// counts each result once. The minute is the trace's creation time's.
// Rows of an hour or day the collector already aggregated get the counts
// too (a trace applied after its hour was rolled up).

const (
	minuteTable = "TASK_RESULT_STATISTICS_MINUTE"
	hourTable   = "TASK_RESULT_STATISTICS_HOUR"
	dayTable    = "TASK_RESULT_STATISTICS_DAY"
	traceTable  = "JOB_STATUS_TRACE_LOG"
)

type resultKey struct {
	ns     string
	minute time.Time
}

// countResults adds the results the batch's new traces end.
func (l *Log) countResults(ctx context.Context, tx *sqlx.Tx, evs []trace.Event) error {
	cand := map[string]trace.StatusTrace{}
	for _, ev := range evs {
		if st, ok := ev.(trace.StatusTrace); ok && (st.State == task.Finished || st.State.Failure()) {
			cand[st.ID] = st
		}
	}
	if len(cand) == 0 {
		return nil
	}
	ids := make([]any, 0, len(cand))
	for id := range cand {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		n := min(len(ids), 500)
		var have []string
		q := "SELECT id FROM " + traceTable + " WHERE id IN (?" + strings.Repeat(", ?", n-1) + ")"
		if err := tx.SelectContext(ctx, &have, q, ids[:n]...); err != nil {
			return fmt.Errorf("replog: statistics: %w", err)
		}
		for _, id := range have {
			delete(cand, id)
		}
		ids = ids[n:]
	}
	counts := map[resultKey][2]int64{}
	for _, st := range cand {
		ns, _ := namespace.Split(st.JobName)
		k := resultKey{ns, st.CreationTime.Truncate(time.Minute)}
		c := counts[k]
		if st.State == task.Finished {
			c[0]++
		} else {
			c[1]++
		}
		counts[k] = c
	}
	now := l.o.Clock.Now()
	for k, c := range counts {
		loc := l.o.Location
		t := k.minute.In(loc)
		hour := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		for _, at := range []struct {
			table string
			t     time.Time
		}{{minuteTable, k.minute}, {hourTable, hour}, {dayTable, day}} {
			res, err := tx.ExecContext(ctx, "UPDATE "+at.table+" SET success_count = success_count + ?, failed_count = failed_count + ? WHERE statistics_time = ? AND namespace = ?",
				c[0], c[1], l.w.TimeArg(at.t), k.ns)
			if err != nil {
				return fmt.Errorf("replog: statistics: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil || n > 0 || at.table != minuteTable {
				continue // an hour or day not rolled up yet gets the minute's counts when it is
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+minuteTable+" (success_count, failed_count, statistics_time, creation_time, namespace) VALUES (?, ?, ?, ?, ?)",
				c[0], c[1], l.w.TimeArg(k.minute), l.w.TimeArg(now), k.ns); err != nil {
				return fmt.Errorf("replog: statistics: %w", err)
			}
		}
	}
	return nil
}
