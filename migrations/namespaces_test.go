package migrations_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"

	"github.com/ejcloud/elasticjob/clock"

	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/migrations"
)

// upTo brings a database to version v as the code before would have:
// the same migration files, applied by goose up to v.
func upTo(t *testing.T, db *sql.DB, dialect string, v int64) {
	t.Helper()
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
	if _, err := p.UpTo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

// A history database written before namespaces (schema version 5, rows
// in the columns the code before wrote) is migrated into the default
// namespace untouched: every row is the default namespace's, its ids and
// values as they were, and reads of the default namespace find them while
// another namespace's find none.
func namespacesKeepOldRows(t *testing.T, db *sql.DB, dialect string) {
	ctx := context.Background()
	upTo(t, db, dialect, 5)
	at := "2024-03-01 11:00:00.000"
	for _, q := range []string{
		`INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, failure_cause, start_time, complete_time)
			VALUES ('e1', 'nightly', 'nightly@-@0@-@READY@-@a@-@u', 'h', '10.0.0.1', 0, 'NORMAL_TRIGGER', 0, 'disk full', '` + at + `', '` + at + `')`,
		`INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time)
			VALUES ('s1', 'nightly', '', 'nightly@-@0@-@READY@-@a@-@u', 'a', 'CLOUD_SCHEDULER', 'READY', '0', 'TASK_FAILED', 'disk full', '` + at + `')`,
		`INSERT INTO AUDIT_LOG (id, creation_time, user_name, role, address, method, route, target_kind, target, summary, status)
			VALUES ('a1', '` + at + `', 'admin', 'admin', '10.0.0.1', 'POST', '/api/job/trigger', 'job', 'nightly', 'trigger', 204)`,
		`INSERT INTO WORKFLOW_RUN_LOG (id, workflow_name, run_id, state, source, attempt, created_time, reason, node_count, succeeded_count, failed_count, skipped_count, version)
			VALUES ('w1', 'flow', 'r1', 'SUCCEEDED', 'API', 1, '` + at + `', '', 1, 1, 0, 0, 3)`,
		`INSERT INTO TASK_RESULT_STATISTICS_DAY (success_count, failed_count, statistics_time, creation_time) VALUES (40, 2, '2024-02-28 00:00:00.000', '2024-02-29 00:00:00.000')`,
		`INSERT INTO JOB_REGISTER_STATISTICS (registered_count, statistics_time, creation_time) VALUES (7, '2024-02-28 00:00:00.000', '2024-02-28 00:00:00.000')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("a row of the code before: %v", err)
		}
	}
	if err := migrations.Apply(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	checkSchema(t, db, dialect)
	for _, table := range append([]string{migrations.TableJobExecutionLog, migrations.TableJobStatusTraceLog, migrations.TableAuditLog,
		migrations.TableWorkflowRunLog}, migrations.StatisticsTables...) {
		var other int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE namespace <> 'default'").Scan(&other); err != nil || other != 0 {
			t.Errorf("%s: %d rows outside the default namespace (%v)", table, other, err)
		}
	}
	var job, cause string
	if err := db.QueryRow("SELECT job_name, failure_cause FROM JOB_EXECUTION_LOG WHERE id = 'e1'").Scan(&job, &cause); err != nil || job != "nightly" || cause != "disk full" {
		t.Errorf("the old execution: %s %s %v", job, cause, err)
	}
	clk := clock.NewFake(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := history.New(sqlx.NewDb(db, driverOf(dialect)), dialect, history.Options{Location: time.UTC, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]int{"default": 1, "pay": 0} {
		page, err := st.Executions(ctx, view.Query{Namespaces: []string{ns}})
		if err != nil || page.Total != want {
			t.Errorf("%s's executions: %+v %v, want %d", ns, page, err, want)
		}
		audits, err := st.Audits(ctx, view.Query{Namespaces: []string{ns}})
		if err != nil || audits.Total != want || (want == 1 && audits.Rows[0].Namespace != "default") {
			t.Errorf("%s's audit: %+v %v", ns, audits, err)
		}
		regs, err := st.JobRegistered(ctx, ns)
		if err != nil || (want == 1) != (len(regs) > 0 && regs[0].RegisteredCount == 7) {
			t.Errorf("%s's registered jobs: %+v %v", ns, regs, err)
		}
		sum, err := st.TaskResultSummary(ctx, ns, view.Online)
		if err != nil || sum.SuccessCount != 40*want {
			t.Errorf("%s's results: %+v %v", ns, sum, err)
		}
	}
}

func TestNamespacesKeepOldRowsSQLite(t *testing.T) {
	namespacesKeepOldRows(t, openSQLite(t), migrations.SQLite)
}

func TestNamespacesKeepOldRowsMySQL(t *testing.T) {
	namespacesKeepOldRows(t, openMySQL(t), migrations.MySQL)
}

func driverOf(dialect string) string {
	if dialect == migrations.MySQL {
		return "mysql"
	}
	return "sqlite"
}
