// Package migrations holds the numbered SQL migrations of the event trace
// and statistics database, for SQLite (the embedded default) and MySQL or
// MariaDB, embedded in the binary and applied with goose at start.
//
// The audit log (AUDIT_LOG, migration 00003) is this project's own: one
// row per write request to the REST API, written through the trace
// writer's spool and aged by the same retention. So are the workflow
// tables (WORKFLOW_RUN_LOG, WORKFLOW_NODE_LOG, migration 00004): one row
// per workflow run and one per node execution that ended.
//
// The tables are column-compatible with Apache ElasticJob-Cloud's
// JobEventRdbStorage and StatisticRdbRepository: same table, column and
// index names and types, so queries written against the original keep
// working. Every statement is CREATE … IF NOT EXISTS, so a database the
// original already populated is adopted as it is.
//
// Apply is idempotent and versioned: goose records applied versions in its
// own table (VersionTable) and applies only what is missing, each
// migration in one transaction. Two schedulers starting at once are safe:
// on MySQL, Apply holds a named lock (GET_LOCK) on a connection of its own
// for the whole run, released by the server if the process dies; on SQLite the
// database file lives in one scheduler's data directory (the trace writer
// locks that directory), and the IF NOT EXISTS statements make even a
// racing second run harmless.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
)

// Table and index names, as in the original.
const (
	TableJobExecutionLog            = "JOB_EXECUTION_LOG"
	TableJobStatusTraceLog          = "JOB_STATUS_TRACE_LOG"
	IndexTaskIDState                = "TASK_ID_STATE_INDEX"
	TableTaskResultStatisticsMinute = "TASK_RESULT_STATISTICS_MINUTE"
	TableTaskResultStatisticsHour   = "TASK_RESULT_STATISTICS_HOUR"
	TableTaskResultStatisticsDay    = "TASK_RESULT_STATISTICS_DAY"
	TableTaskRunningStatistics      = "TASK_RUNNING_STATISTICS"
	TableJobRunningStatistics       = "JOB_RUNNING_STATISTICS"
	TableJobRegisterStatistics      = "JOB_REGISTER_STATISTICS"
	TableAuditLog                   = "AUDIT_LOG"         // write requests to the REST API (00003)
	TableWorkflowRunLog             = "WORKFLOW_RUN_LOG"  // workflow runs (00004)
	TableWorkflowNodeLog            = "WORKFLOW_NODE_LOG" // workflow node executions (00004)

	// VersionTable is goose's version table for these migrations.
	VersionTable = "elasticjob_trace_schema_version"
)

// Dialects.
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// StatisticsTables lists the statistics tables.
var StatisticsTables = []string{
	TableTaskResultStatisticsMinute, TableTaskResultStatisticsHour, TableTaskResultStatisticsDay,
	TableTaskRunningStatistics, TableJobRunningStatistics, TableJobRegisterStatistics,
}

//go:embed sqlite/*.sql mysql/*.sql
var files embed.FS

// ErrDialect is returned for a dialect other than "sqlite" or "mysql".
var ErrDialect = errors.New("migrations: unknown dialect")

// FS returns the migration files of a dialect.
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case SQLite, MySQL:
		return fs.Sub(files, dialect)
	}
	return nil, fmt.Errorf("%w %q (want %q or %q)", ErrDialect, dialect, SQLite, MySQL)
}

// Apply brings the schema up to date. It is safe to call at every start
// and from several processes at once (see the package comment).
//
// On MySQL the named lock is held on a connection of its own for the whole
// run (goose's own session lock does not cover its first look at the
// version table), so db must allow at least two open connections.
func Apply(ctx context.Context, db *sql.DB, dialect string) (err error) {
	p, err := provider(db, dialect)
	if err != nil {
		return err
	}
	if dialect == MySQL {
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrations: %w", err)
		}
		defer conn.Close()
		if err := lockMySQL(ctx, conn); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unlockMySQL(context.WithoutCancel(ctx), conn)) }()
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: apply %s: %w", dialect, err)
	}
	return nil
}

// Version reports the schema version applied (0: none) and the latest
// version this binary knows.
func Version(ctx context.Context, db *sql.DB, dialect string) (current, latest int64, err error) {
	p, err := provider(db, dialect)
	if err != nil {
		return 0, 0, err
	}
	current, latest, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: version: %w", err)
	}
	return current, latest, nil
}

func provider(db *sql.DB, dialect string) (*goose.Provider, error) {
	fsys, err := FS(dialect)
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithTableName(VersionTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(slog.New(slog.DiscardHandler)),
	}
	gd := goose.DialectSQLite3
	if dialect == MySQL {
		gd = goose.DialectMySQL
	}
	p, err := goose.NewProvider(gd, db, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
