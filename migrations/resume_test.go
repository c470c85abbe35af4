package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/migrations"
)

// MySQL and MariaDB commit each ALTER TABLE and CREATE INDEX by itself, so
// a migration cut off halfway leaves some of its statements applied and
// its version unrecorded. These tests cut real runs against MariaDB at
// every kind of point and start again: the next Apply completes the
// schema, rows intact, instead of failing with "Duplicate column name".

// namespacesBefore are the statements of 00006 as the code before ran
// them (unguarded), in order: what an interrupted run of that code left.
var namespacesBefore = func() []string {
	var out []string
	for _, t := range []string{"JOB_EXECUTION_LOG", "JOB_STATUS_TRACE_LOG", "AUDIT_LOG", "WORKFLOW_RUN_LOG", "WORKFLOW_NODE_LOG",
		"TASK_RESULT_STATISTICS_MINUTE", "TASK_RESULT_STATISTICS_HOUR", "TASK_RESULT_STATISTICS_DAY",
		"TASK_RUNNING_STATISTICS", "JOB_RUNNING_STATISTICS", "JOB_REGISTER_STATISTICS"} {
		out = append(out, "ALTER TABLE `"+t+"` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT 'default'")
	}
	return append(out,
		"CREATE INDEX `JOB_EXECUTION_LOG_NAMESPACE_START_INDEX` ON `JOB_EXECUTION_LOG` (`namespace`, `start_time`)",
		"CREATE INDEX `JOB_STATUS_TRACE_LOG_NAMESPACE_CREATION_INDEX` ON `JOB_STATUS_TRACE_LOG` (`namespace`, `creation_time`)",
		"CREATE INDEX `AUDIT_LOG_NAMESPACE_TIME_INDEX` ON `AUDIT_LOG` (`namespace`, `creation_time`)",
		"CREATE INDEX `WORKFLOW_RUN_LOG_NAMESPACE_TIME_INDEX` ON `WORKFLOW_RUN_LOG` (`namespace`, `created_time`)")
}()

// oldRow is a row of the code before, to be found intact after.
func oldRow(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time)
		VALUES ('e1', 'nightly', 'nightly@-@0@-@READY@-@a@-@u', 'h', '10.0.0.1', 0, 'NORMAL_TRIGGER', 1, '2024-03-01 11:00:00')`); err != nil {
		t.Fatal(err)
	}
}

func checkResumed(t *testing.T, db *sql.DB) {
	t.Helper()
	checkSchema(t, db, migrations.MySQL)
	current, latest, err := migrations.Version(context.Background(), db, migrations.MySQL)
	if err != nil || current != latest {
		t.Fatalf("version %d of %d: %v", current, latest, err)
	}
	var ns, job string
	if err := db.QueryRow("SELECT namespace, job_name FROM JOB_EXECUTION_LOG WHERE id = 'e1'").Scan(&ns, &job); err != nil || ns != "default" || job != "nightly" {
		t.Fatalf("the old row: %q %q %v", ns, job, err)
	}
}

// The code before was cut off after k of its statements (the failure seen
// in a loaded test run): this version's migration completes the schema.
func TestMySQLNamespacesResumeAfterTheCodeBefore(t *testing.T) {
	for _, k := range []int{1, 5, 11, 12, len(namespacesBefore) - 1} {
		t.Run(fmt.Sprintf("after %d of %d", k, len(namespacesBefore)), func(t *testing.T) {
			db := openMySQL(t)
			upTo(t, db, migrations.MySQL, 5)
			oldRow(t, db)
			for _, q := range namespacesBefore[:k] {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := migrations.Apply(context.Background(), db, migrations.MySQL); err != nil {
				t.Fatalf("the next start: %v", err)
			}
			checkResumed(t, db)
		})
	}
}

// This version's own run, cut off (every connection dropped by a proxy)
// just before its k-th statement reaches the server: that start fails,
// the database holds a part of the migration, and the next start
// completes it.
func TestMySQLMigrationResumesAfterCut(t *testing.T) {
	const step = "EXECUTE ej_stmt"                  // each guarded ALTER or CREATE INDEX of 00006 and 00007 runs as one
	_ = mysql.SetLogger(log.New(io.Discard, "", 0)) // the driver logs each cut connection
	for _, k := range []int{1, 2, 7, 12, 15, 16} {
		t.Run(fmt.Sprintf("cut at statement %d", k), func(t *testing.T) {
			dsn := testproxy.MySQL(t)
			direct, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			upTo(t, direct, migrations.MySQL, 5)
			oldRow(t, direct)
			proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
			cutDB, err := sql.Open("mysql", testproxy.Via(t, dsn, proxy.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer cutDB.Close()
			cut := proxy.CutAt(step, k)
			err = migrations.Apply(context.Background(), cutDB, migrations.MySQL)
			select {
			case <-cut:
			default:
				t.Fatalf("the run was not cut (err %v)", err)
			}
			if err == nil {
				t.Fatal("a run cut off reported success")
			}
			want := int64(5) // 00006 unrecorded
			if k > 15 {
				want = 6 // 00006 done, 00007's one statement cut
			}
			if current, _, verr := migrations.Version(context.Background(), direct, migrations.MySQL); verr != nil || current != want {
				t.Fatalf("after the cut: version %d (%v), want %d (the migration cut unrecorded)", current, verr, want)
			}
			if k > 1 && k <= 12 { // some columns added, not all: the state that failed before
				added := namespaceColumns(t, direct)
				if added != k-1 {
					t.Fatalf("after the cut at %d: %d tables have the namespace column, want %d", k, added, k-1)
				}
			}
			if err := migrations.Apply(context.Background(), direct, migrations.MySQL); err != nil {
				t.Fatalf("the next start: %v", err)
			}
			checkResumed(t, direct)
		})
	}
}

func namespaceColumns(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND column_name = 'namespace'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Without the guards, the same interruption fails every later start: the
// failure the guards fix, reproduced here so the tests above cannot pass
// for a reason of their own.
func TestMySQLUnguardedMigrationFailsAfterCut(t *testing.T) {
	db := openMySQL(t)
	upTo(t, db, migrations.MySQL, 5)
	for _, q := range namespacesBefore[:3] {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range namespacesBefore {
		if _, err := db.Exec(q); err != nil {
			if !strings.Contains(err.Error(), "Duplicate column name 'namespace'") {
				t.Fatalf("unexpected: %v", err)
			}
			return
		}
	}
	t.Fatal("the unguarded statements ran twice without an error")
}
