package trace

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/migrations"
	"github.com/ejcloud/elasticjob/task"
	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
)

const (
	dialectSQLite = migrations.SQLite
	dialectMySQL  = migrations.MySQL
)

// maxRowsPerStatement keeps a multi-row INSERT under every placeholder
// limit (SQLite: 32766, MySQL: 65535) at 11 columns.
const maxRowsPerStatement = 1000

// sqliteTime is how times are stored in SQLite: UTC, sortable as text,
// read back as time.Time by the driver (TIMESTAMP columns).
const sqliteTime = "2006-01-02 15:04:05.000"

// walCheckpointPages is how many pages the history's write-ahead log
// holds before they are copied back into the database (SQLite's default
// is 1,000). A large cluster's history rows land all over the job-name and
// task-id indexes, and the rightmost pages of the time-ordered ones are
// rewritten by every batch: a longer log copies each page back once for
// many batches. 10,000 pages cut the writer's CPU per event by 16 % against
// 1,000 in BenchmarkSQLiteManyJobs (20,000 jobs); 40,000 (160 MB of log at
// most, in the usual case) another 9 % against 10,000 with 100,000 jobs
// (34.6–35.4 → 30.5–32.2 µs per event, three runs each, alternated); 80,000
// did no better.
const walCheckpointPages = 40_000

// openDB opens (without connecting) the database. SQLite: the file at dsn
// (a plain path gets WAL, NORMAL sync, a busy timeout, IMMEDIATE
// transactions and a checkpoint every walCheckpointPages). MySQL: the DSN
// with parseTime, UTC on both sides, client-side interpolation (one round
// trip per batch) and timeouts.
func openDB(dialect, dsn string) (*sqlx.DB, error) {
	if dialect == dialectSQLite {
		if !strings.HasPrefix(dsn, "file:") && !strings.Contains(dsn, "?") {
			dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(" + strconv.Itoa(walCheckpointPages) + ")&_txlock=immediate"
		}
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("trace: open sqlite: %w", err)
		}
		db.SetMaxOpenConns(8)
		return sqlx.NewDb(db, "sqlite3"), nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("trace: mysql DSN: %w", err)
	}
	cfg.ParseTime, cfg.Loc, cfg.InterpolateParams = true, time.UTC, true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("trace: mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxLifetime(5 * time.Minute)
	return sqlx.NewDb(db, "mysql"), nil
}

// sqlWriter writes batches in one dialect.
type sqlWriter struct {
	db      *sqlx.DB
	dialect string
}

func newSQLWriter(db *sqlx.DB, dialect string, _ int) *sqlWriter {
	return &sqlWriter{db: db, dialect: dialect}
}

func (s *sqlWriter) connect(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("trace: connect: %w", err)
	}
	return migrations.Apply(ctx, s.db.DB, s.dialect)
}

// timeArg binds a time: NULL when zero (or, on MySQL, outside TIMESTAMP's
// range), UTC text on SQLite, UTC time.Time on MySQL.
func timeArg(dialect string, t time.Time) any {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	if dialect == dialectSQLite {
		return t.Format(sqliteTime)
	}
	if t.Unix() < 1 || t.Unix() > 1<<31-1 {
		return nil
	}
	return t
}

func (s *sqlWriter) insertIgnore() string {
	if s.dialect == dialectMySQL {
		return "INSERT IGNORE INTO "
	}
	return "INSERT OR IGNORE INTO "
}

// completeUpsert is the conflict clause of ExecutionComplete: the
// original's UPDATE (is_success, complete_time, failure_cause on failure),
// also filling host, ip and start time the start row lacked.
func (s *sqlWriter) completeUpsert() string {
	if s.dialect == dialectMySQL {
		return " ON DUPLICATE KEY UPDATE is_success = VALUES(is_success), result = VALUES(result), complete_time = VALUES(complete_time), " +
			"failure_cause = IF(VALUES(is_success) = 1, failure_cause, VALUES(failure_cause)), " +
			"hostname = IF(hostname = '', VALUES(hostname), hostname), ip = IF(ip = '', VALUES(ip), ip), " +
			"start_time = COALESCE(start_time, VALUES(start_time)), triggered_by = COALESCE(NULLIF(triggered_by, ''), VALUES(triggered_by)), " +
			"nominal_at = COALESCE(nominal_at, VALUES(nominal_at))"
	}
	return " ON CONFLICT(id) DO UPDATE SET is_success = excluded.is_success, result = excluded.result, complete_time = excluded.complete_time, " +
		"failure_cause = CASE WHEN excluded.is_success = 1 THEN failure_cause ELSE excluded.failure_cause END, " +
		"hostname = CASE WHEN hostname = '' THEN excluded.hostname ELSE hostname END, " +
		"ip = CASE WHEN ip = '' THEN excluded.ip ELSE ip END, start_time = COALESCE(start_time, excluded.start_time), " +
		"triggered_by = COALESCE(NULLIF(triggered_by, ''), excluded.triggered_by), nominal_at = COALESCE(nominal_at, excluded.nominal_at)"
}

// write stores a batch in one transaction.
func (s *sqlWriter) write(ctx context.Context, evs []Event) error {
	return s.writeTx(ctx, evs, nil)
}

// writeTx stores a batch in one transaction, with inTx's writes (nil:
// none) first: inTx sees the tables as they were before the batch.
func (s *sqlWriter) writeTx(ctx context.Context, evs []Event, inTx func(context.Context, *sqlx.Tx) error) error {
	k := sortEvents(evs)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("trace: begin: %w", err)
	}
	defer tx.Rollback()
	if inTx != nil {
		if err := inTx(ctx, tx); err != nil {
			return err
		}
	}
	if err := s.fillOriginalTaskIDs(ctx, tx, k.traces); err != nil {
		return err
	}
	if err := s.writeTraces(ctx, tx, k.traces); err != nil {
		return err
	}
	if err := s.writeStarts(ctx, tx, k.starts); err != nil {
		return err
	}
	if err := s.writeCompletes(ctx, tx, k.completes); err != nil {
		return err
	}
	if err := s.writeAudits(ctx, tx, k.audits); err != nil {
		return err
	}
	if err := s.writeWorkflows(ctx, tx, k.wfRuns, k.wfNodes); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("trace: commit: %w", err)
	}
	return nil
}

// eventKinds is a batch of events sorted by kind, each kind in its order.
type eventKinds struct {
	traces    []StatusTrace
	starts    []ExecutionStart
	completes []ExecutionComplete
	audits    []Audit
	wfRuns    []WorkflowRun
	wfNodes   []WorkflowNode
}

func sortEvents(evs []Event) eventKinds {
	var k eventKinds
	for _, ev := range evs {
		switch e := ev.(type) {
		case StatusTrace:
			k.traces = append(k.traces, e)
		case ExecutionStart:
			k.starts = append(k.starts, e)
		case ExecutionComplete:
			k.completes = append(k.completes, e)
		case Audit:
			k.audits = append(k.audits, e)
		case WorkflowRun:
			k.wfRuns = append(k.wfRuns, e)
		case WorkflowNode:
			k.wfNodes = append(k.wfNodes, e)
		}
	}
	return k
}

func (s *sqlWriter) writeTraces(ctx context.Context, tx *sqlx.Tx, traces []StatusTrace) error {
	d := s.dialect
	return insertRows(ctx, tx, s.insertIgnore()+migrations.TableJobStatusTraceLog+
		" (id, namespace, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time) VALUES ",
		12, "", len(traces), func(i int) []any {
			e := traces[i]
			ns, job := split(e.JobName)
			return []any{e.ID, ns, job, e.OriginalTaskID, e.TaskID, e.SlaveID, e.Source, e.ExecutionType, e.ShardingItem,
				e.State, e.Message, timeArg(d, e.CreationTime)}
		})
}

func (s *sqlWriter) writeStarts(ctx context.Context, tx *sqlx.Tx, starts []ExecutionStart) error {
	d := s.dialect
	return insertRows(ctx, tx, s.insertIgnore()+migrations.TableJobExecutionLog+
		" (id, namespace, job_name, task_id, hostname, ip, sharding_item, execution_source, triggered_by, nominal_at, is_success, start_time) VALUES ",
		12, "", len(starts), func(i int) []any {
			e := starts[i]
			ns, job := split(e.JobName)
			return []any{e.ID, ns, job, e.TaskID, e.Hostname, e.IP, e.ShardingItem, e.ExecutionSource, nullable(e.TriggeredBy), timeArg(d, e.NominalAt), 0, timeArg(d, e.StartTime)}
		})
}

const completeCols = " (id, namespace, job_name, task_id, hostname, ip, sharding_item, execution_source, triggered_by, nominal_at, failure_cause, is_success, result, start_time, complete_time) VALUES "

// writeCompletes writes completions: on SQLite whole rows (start and
// completion merged) go in as new rows first, then the rest upsert.
func (s *sqlWriter) writeCompletes(ctx context.Context, tx *sqlx.Tx, completes []ExecutionComplete) error {
	d := s.dialect
	ins := "INSERT INTO "
	if d == dialectMySQL {
		ins = "INSERT IGNORE INTO " // data problems become warnings, as for the other rows
	}
	completeRow := func(e ExecutionComplete) []any {
		var cause any
		if !e.Success {
			cause = e.FailureCause
		}
		ns, job := split(e.JobName)
		return []any{e.ID, ns, job, e.TaskID, e.Hostname, e.IP, e.ShardingItem, e.ExecutionSource, nullable(e.TriggeredBy), timeArg(d, e.NominalAt), cause, boolInt(e.Success),
			e.Result(), timeArg(d, e.StartTime), timeArg(d, e.CompleteTime)}
	}
	upsert := func(cs []ExecutionComplete) error {
		complete := insertRows
		if d == dialectSQLite {
			complete = insertEach
		}
		return complete(ctx, tx, ins+migrations.TableJobExecutionLog+completeCols, 15, s.completeUpsert(), len(cs),
			func(i int) []any { return completeRow(cs[i]) })
	}
	if d == dialectSQLite {
		// Whole rows are new rows but after a replay: many-row inserts,
		// each checked by its count of rows and upserted row by row when a
		// row was already there.
		var whole []ExecutionComplete
		rest := completes[:0:0]
		for _, c := range completes {
			if c.whole {
				whole = append(whole, c)
			} else {
				rest = append(rest, c)
			}
		}
		if err := insertNew(ctx, tx, s.insertIgnore()+migrations.TableJobExecutionLog+completeCols, 15, len(whole),
			func(i int) []any { return completeRow(whole[i]) },
			func(lo, hi int) error { return upsert(whole[lo:hi]) }); err != nil {
			return err
		}
		completes = rest
	}
	return upsert(completes)
}

// insertRows runs head + (?, …), … + tail for n rows, in statements of at
// most maxRowsPerStatement rows.
func insertRows(ctx context.Context, tx *sqlx.Tx, head string, cols int, tail string, n int, row func(int) []any) error {
	return eachStatement(head, cols, tail, n, row, func(_, _ int, q string, args []any) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("trace: insert: %w", err)
		}
		return nil
	})
}

// insertNew is insertRows of insert-or-ignore rows that are new in the
// usual case: a statement that inserted fewer rows than it had (some were
// there) is followed by again(lo, hi) for its rows.
func insertNew(ctx context.Context, tx *sqlx.Tx, head string, cols, n int, row func(int) []any, again func(lo, hi int) error) error {
	return eachStatement(head, cols, "", n, row, func(lo, hi int, q string, args []any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("trace: insert: %w", err)
		}
		if k, err := res.RowsAffected(); err != nil || k != int64(hi-lo) {
			return again(lo, hi)
		}
		return nil
	})
}

// eachStatement builds head + (?, …), … + tail for rows [lo, hi) of n, at
// most maxRowsPerStatement at a time, and calls exec with each.
func eachStatement(head string, cols int, tail string, n int, row func(int) []any, exec func(lo, hi int, q string, args []any) error) error {
	one := rowPlaceholders(cols)
	for lo := 0; lo < n; lo += maxRowsPerStatement {
		hi := min(n, lo+maxRowsPerStatement)
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, (hi-lo)*cols)
		for i := lo; i < hi; i++ {
			if i > lo {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, row(i)...)
		}
		b.WriteString(tail)
		if err := exec(lo, hi, b.String(), args); err != nil {
			return err
		}
	}
	return nil
}

// insertEach runs head + (?, …) + tail once per row, one prepared
// statement: what the completions' upsert takes on SQLite. An upsert of many
// rows in one statement may abort half-way (a constraint of its UPDATE
// part), so SQLite keeps every page it changes in a statement journal,
// spilled to a temporary file past 64 KiB: 2.4 % of the scheduler's CPU in
// the simulated cluster, and one write system call per page. A statement of
// one row needs none (BenchmarkSQLiteManyJobs: 9.4 → 8.0 read and write
// system calls per event). MySQL keeps the multi-row statement: there,
// each statement is a round trip.
func insertEach(ctx context.Context, tx *sqlx.Tx, head string, cols int, tail string, n int, row func(int) []any) error {
	if n == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, head+rowPlaceholders(cols)+tail)
	if err != nil {
		return fmt.Errorf("trace: insert: %w", err)
	}
	defer st.Close()
	for i := range n {
		if _, err := st.ExecContext(ctx, row(i)...); err != nil {
			return fmt.Errorf("trace: insert: %w", err)
		}
	}
	return nil
}

// rowPlaceholders is one row's "(?, …, ?)" of cols columns.
func rowPlaceholders(cols int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
}

// fillOriginalTaskIDs gives failover tasks' later traces the original
// task id of their TASK_STAGING trace when the caller did not know it (the
// original looked it up the same way).
func (s *sqlWriter) fillOriginalTaskIDs(ctx context.Context, tx *sqlx.Tx, traces []StatusTrace) error {
	staged := map[string]string{}
	var ask []string
	for _, t := range traces {
		switch {
		case t.State == task.Staging:
			staged[t.TaskID] = t.OriginalTaskID
		case t.ExecutionType == ExecutionFailover && t.OriginalTaskID == "":
			if _, ok := staged[t.TaskID]; !ok {
				ask = append(ask, t.TaskID)
			}
		}
	}
	if len(ask) > 0 {
		q, args, err := sqlx.In("SELECT task_id, original_task_id FROM "+migrations.TableJobStatusTraceLog+
			" WHERE state = ? AND task_id IN (?)", task.Staging, ask)
		if err != nil {
			return fmt.Errorf("trace: original task ids: %w", err)
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("trace: original task ids: %w", err)
		}
		for rows.Next() {
			var tid, orig string
			if err := rows.Scan(&tid, &orig); err != nil {
				rows.Close()
				return fmt.Errorf("trace: original task ids: %w", err)
			}
			staged[tid] = orig
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("trace: original task ids: %w", err)
		}
	}
	for i, t := range traces {
		if t.State != task.Staging && t.OriginalTaskID == "" {
			traces[i].OriginalTaskID = staged[t.TaskID]
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isDataError reports an error about the rows themselves (which a retry
// cannot fix), as opposed to the connection or the server's state.
func isDataError(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1048, 1062, 1136, 1264, 1265, 1292, 1366, 1406, 1411, 1452, 3140, 4025:
			return true
		}
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 18, 19, 20, 25: // TOOBIG, CONSTRAINT, MISMATCH, RANGE
			return true
		}
	}
	return false
}

// writeBatch writes a batch; if the database refuses it for its data, the
// events are written one by one and the refused ones set aside (counted,
// logged and kept in the spool directory's rejected.jsonl) so one bad
// event never blocks history.
func (w *Writer) writeBatch(ctx context.Context, evs []Event) error {
	err := w.writeTimeout(ctx, evs)
	if err == nil || !isDataError(err) {
		return err
	}
	for _, ev := range evs {
		err := w.writeTimeout(ctx, []Event{ev})
		if err == nil {
			continue
		}
		if !isDataError(err) {
			return err
		}
		w.reject(ev, err)
	}
	return nil
}

func (w *Writer) writeTimeout(ctx context.Context, evs []Event) error {
	ctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
	defer cancel()
	return w.sql.write(ctx, evs)
}

// nullable is NULL for "" (a column that was not always written).
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
