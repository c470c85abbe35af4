package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite"

	"github.com/pressly/goose/v3"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/migrations"
)

// The original's columns (JobEventRdbStorage, StatisticRdbRepository), and the namespace
// each row belongs to (00006; the original's inserts name their columns, so it takes its default).
var wantColumns = map[string][]string{
	migrations.TableJobExecutionLog: {"id", "job_name", "task_id", "hostname", "ip", "sharding_item",
		"execution_source", "failure_cause", "is_success", "start_time", "complete_time", "namespace", "triggered_by", "nominal_at", "result"},
	migrations.TableJobStatusTraceLog: {"id", "job_name", "original_task_id", "task_id", "slave_id", "source",
		"execution_type", "sharding_item", "state", "message", "creation_time", "namespace"},
	migrations.TableTaskResultStatisticsMinute: {"id", "success_count", "failed_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableTaskResultStatisticsHour:   {"id", "success_count", "failed_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableTaskResultStatisticsDay:    {"id", "success_count", "failed_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableTaskRunningStatistics:      {"id", "running_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableJobRunningStatistics:       {"id", "running_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableJobRegisterStatistics:      {"id", "registered_count", "statistics_time", "creation_time", "namespace"},
	migrations.TableAuditLog: {"id", "creation_time", "user_name", "role", "address", "method", "route", "target_kind",
		"target", "summary", "status", "namespace"},
	migrations.TableWorkflowRunLog: {"id", "workflow_name", "run_id", "state", "source", "attempt", "created_time", "start_time",
		"end_time", "reason", "node_count", "succeeded_count", "failed_count", "skipped_count", "version", "namespace"},
	migrations.TableWorkflowNodeLog: {"id", "workflow_name", "run_id", "node_id", "job_name", "depends_on", "trigger_rule", "attempt", "state", "run_key",
		"task_ids", "queued_time", "start_time", "end_time", "skip_reason", "message", "outputs", "namespace"},
}

// Indexes beyond the original's, by table: name → columns in order (nil:
// the index must not exist).
var wantIndexes = map[string]map[string][]string{
	migrations.TableJobExecutionLog: {
		"JOB_EXECUTION_LOG_JOB_START_INDEX":       {"job_name", "start_time"},
		"JOB_EXECUTION_LOG_NAMESPACE_START_INDEX": {"namespace", "start_time"},
		"JOB_EXECUTION_LOG_JOB_NAME_INDEX":        nil, // dropped by 00005: the one above leads with job_name
	},
	migrations.TableAuditLog: {
		"AUDIT_LOG_NAMESPACE_TIME_INDEX": {"namespace", "creation_time"},
		"AUDIT_LOG_CREATION_TIME_INDEX":  {"creation_time"},
		"AUDIT_LOG_USER_TIME_INDEX":      {"user_name", "creation_time"},
		"AUDIT_LOG_TARGET_TIME_INDEX":    {"target", "creation_time"},
	},
	migrations.TableWorkflowRunLog: {
		"WORKFLOW_RUN_LOG_NAME_TIME_INDEX":      {"workflow_name", "created_time"},
		"WORKFLOW_RUN_LOG_NAMESPACE_TIME_INDEX": {"namespace", "created_time"},
		"WORKFLOW_RUN_LOG_TIME_INDEX":           {"created_time"},
	},
	migrations.TableWorkflowNodeLog: {
		"WORKFLOW_NODE_LOG_RUN_INDEX":  {"workflow_name", "run_id"},
		"WORKFLOW_NODE_LOG_TIME_INDEX": {"end_time"},
	},
}

func openSQLite(t *testing.T) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "trace.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openMySQL(t *testing.T) *sql.DB {
	db, err := sql.Open("mysql", testproxy.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func columns(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM " + table + " WHERE 1=0")
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	for i := range cols {
		cols[i] = strings.ToLower(cols[i])
	}
	return cols
}

func checkSchema(t *testing.T, db *sql.DB, dialect string) {
	t.Helper()
	for table, want := range wantColumns {
		if got := columns(t, db, table); !reflect.DeepEqual(got, want) {
			t.Errorf("%s columns %v, want %v", table, got, want)
		}
	}
	var n int
	q := "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name=? AND tbl_name=?"
	if dialect == migrations.MySQL {
		q = "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics WHERE table_schema=DATABASE() AND index_name=? AND table_name=?"
	}
	if err := db.QueryRow(q, migrations.IndexTaskIDState, migrations.TableJobStatusTraceLog).Scan(&n); err != nil || n != 1 {
		t.Errorf("index %s: n=%d err=%v", migrations.IndexTaskIDState, n, err)
	}
	if got := indexColumns(t, db, dialect, migrations.TableJobStatusTraceLog, migrations.IndexTaskIDState); !reflect.DeepEqual(got, []string{"task_id", "state"}) {
		t.Errorf("%s columns %v", migrations.IndexTaskIDState, got)
	}
	for table, idx := range wantIndexes {
		for name, want := range idx {
			if got := indexColumns(t, db, dialect, table, name); !reflect.DeepEqual(got, want) {
				t.Errorf("index %s on %s: columns %v, want %v", name, table, got, want)
			}
		}
	}
}

// indexColumns lists an index's columns in order (none: no such index).
func indexColumns(t *testing.T, db *sql.DB, dialect, table, index string) []string {
	t.Helper()
	q := "SELECT name FROM pragma_index_info(?) WHERE (SELECT tbl_name FROM sqlite_master WHERE type='index' AND name=?) = ? ORDER BY seqno"
	args := []any{index, index, table}
	if dialect == migrations.MySQL {
		q = `SELECT column_name FROM information_schema.statistics WHERE table_schema=DATABASE()
			AND index_name=? AND table_name=? ORDER BY seq_in_index`
		args = []any{index, table}
	}
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("index %s: %v", index, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, strings.ToLower(c))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols
}

func applyTwice(t *testing.T, db *sql.DB, dialect string) {
	ctx := context.Background()
	for i := range 2 {
		if err := migrations.Apply(ctx, db, dialect); err != nil {
			t.Fatalf("apply #%d: %v", i+1, err)
		}
	}
	cur, latest, err := migrations.Version(ctx, db, dialect)
	if err != nil || cur != latest || latest < 1 {
		t.Fatalf("version %d of %d: %v", cur, latest, err)
	}
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + migrations.VersionTable + " WHERE version_id > 0").Scan(&rows); err != nil || int64(rows) != latest {
		t.Fatalf("version rows %d (want %d): %v", rows, latest, err)
	}
	checkSchema(t, db, dialect)
}

func TestApplySQLiteTwice(t *testing.T) { applyTwice(t, openSQLite(t), migrations.SQLite) }

func TestApplyMySQLTwice(t *testing.T) { applyTwice(t, openMySQL(t), migrations.MySQL) }

// Two schedulers starting at once: the named lock serialises them, each
// migration is recorded once.
func TestApplyMySQLConcurrently(t *testing.T) {
	dsn := testproxy.MySQL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = migrations.Apply(context.Background(), db, migrations.MySQL)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	check, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	applyTwice(t, check, migrations.MySQL)
}

// A database the original already created (its DDL, no version table) is
// adopted: Apply succeeds and keeps the rows (on MySQL, 00005 finds no
// index of ours to drop there).
func TestApplySQLiteAdoptsOriginalTables(t *testing.T) { adopt(t, openSQLite(t), migrations.SQLite) }

func TestApplyMySQLAdoptsOriginalTables(t *testing.T) { adopt(t, openMySQL(t), migrations.MySQL) }

func adopt(t *testing.T, db *sql.DB, dialect string) {
	orig := "CREATE TABLE JOB_EXECUTION_LOG (id VARCHAR(40) NOT NULL, job_name VARCHAR(100) NOT NULL, task_id VARCHAR(255) NOT NULL, " +
		"hostname VARCHAR(255) NOT NULL, ip VARCHAR(50) NOT NULL, sharding_item INT NOT NULL, execution_source VARCHAR(20) NOT NULL, " +
		"failure_cause VARCHAR(4000) NULL, is_success INT NOT NULL, start_time TIMESTAMP NULL, complete_time TIMESTAMP NULL, PRIMARY KEY (id))"
	if _, err := db.Exec(orig); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success) VALUES ('x','j','t','h','i',0,'NORMAL_TRIGGER',1)"); err != nil {
		t.Fatal(err)
	}
	applyTwice(t, db, dialect)
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM JOB_EXECUTION_LOG").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows %d %v", n, err)
	}
}

func TestUnknownDialect(t *testing.T) {
	if err := migrations.Apply(context.Background(), openSQLite(t), "postgres"); !errors.Is(err, migrations.ErrDialect) {
		t.Fatalf("err = %v", err)
	}
}

func TestBothDialectsHaveTheSameMigrations(t *testing.T) {
	names := func(d string) []string {
		fsys, err := migrations.FS(d)
		if err != nil {
			t.Fatal(err)
		}
		m, err := fsGlob(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if a, b := names(migrations.SQLite), names(migrations.MySQL); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("sqlite %v, mysql %v", a, b)
	}
}

// upgradeFrom2 takes a database at version 2 (history rows in it, as a
// scheduler of the previous release left it) to the latest: the audit log
// appears, the rows stay, and an audit row can be written and read back.
func upgradeFrom2(t *testing.T, db *sql.DB, dialect string) {
	ctx := context.Background()
	fsys, err := migrations.FS(dialect)
	if err != nil {
		t.Fatal(err)
	}
	gd := goose.DialectSQLite3
	if dialect == migrations.MySQL {
		gd = goose.DialectMySQL
	}
	p, err := goose.NewProvider(gd, db, fsys, goose.WithTableName(migrations.VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SELECT 1 FROM " + migrations.TableAuditLog + " WHERE 1=0"); err == nil {
		t.Fatal("AUDIT_LOG exists at version 2")
	}
	if _, err := db.Exec("INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success) VALUES ('x','j','t','h','i',0,'NORMAL_TRIGGER',1)"); err != nil {
		t.Fatal(err)
	}
	applyTwice(t, db, dialect)
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM JOB_EXECUTION_LOG").Scan(&n); err != nil || n != 1 {
		t.Fatalf("execution rows after the upgrade: %d %v", n, err)
	}
	summary := strings.Repeat("é", 2000) // the full width, in characters, on both
	if _, err := db.Exec("INSERT INTO "+migrations.TableAuditLog+" (id, creation_time, user_name, role, address, method, route, target_kind, target, summary, status) "+
		"VALUES ('a1', '2024-03-01 12:00:00.123', 'root', 'admin', '127.0.0.1', 'POST', '/api/app', 'app', 'demo', ?, 200)", summary); err != nil {
		t.Fatal(err)
	}
	var got string
	var status int
	if err := db.QueryRow("SELECT summary, status FROM "+migrations.TableAuditLog+" WHERE id = 'a1'").Scan(&got, &status); err != nil || got != summary || status != 200 {
		t.Fatalf("audit row read back: %d chars, status %d, %v", len([]rune(got)), status, err)
	}
}

func TestUpgradeSQLiteFromVersion2(t *testing.T) { upgradeFrom2(t, openSQLite(t), migrations.SQLite) }

func TestUpgradeMySQLFromVersion2(t *testing.T) { upgradeFrom2(t, openMySQL(t), migrations.MySQL) }
