package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/migrations"
	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"
)

// testDB is one migrated database under test.
type testDB struct {
	name    string // dialect
	db      *sqlx.DB
	d       dialect
	clock   *clock.Fake
	store   *Store
	dialect string
}

// t0 is the fake clock's start.
var t0 = time.Date(2024, 3, 1, 11, 58, 30, 0, time.UTC)

func openSQLite(t testing.TB, path string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db.DB, migrations.SQLite); err != nil {
		t.Fatal(err)
	}
	return db
}

// migratedSQLite is a SQLite file with every migration applied, built once
// per test binary: applying the migrations to a fresh file costs about half
// a CPU-second under the race detector (goose parses each file into a
// 4 MiB buffer its pool does not keep under -race, and SQLite runs the
// DDL), and eachDB's tests want a migrated database, not the migration,
// which package migrations tests.
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "history-migrated-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.db")
	db, err := sqlx.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	if err := migrations.Apply(context.Background(), db.DB, migrations.SQLite); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// openMigratedSQLite is openSQLite of a copy of migratedSQLite at path:
// migrations.Apply still runs on it and finds every version applied.
func openMigratedSQLite(t testing.TB, path string) *sqlx.DB {
	t.Helper()
	b, err := migratedSQLite()
	if err != nil {
		t.Fatalf("the migrated SQLite database: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return openSQLite(t, path)
}

// openMySQL creates a database of its own on the test MariaDB (dropped at
// cleanup) and returns a migrated connection to it as the test user.
func openMySQL(t testing.TB) *sqlx.DB {
	t.Helper()
	dsn, admin := os.Getenv("EJ_TEST_MYSQL_DSN"), os.Getenv("EJ_TEST_MYSQL_ADMIN_DSN")
	if dsn == "" || admin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("EJ_TEST_MYSQL_DSN and EJ_TEST_MYSQL_ADMIN_DSN must be set in CI")
		}
		t.Skip("EJ_TEST_MYSQL_DSN unset (start scripts/services.sh)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ej_hist_" + hex.EncodeToString(b[:])
	root, err := sqlx.Open("mysql", admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var host string
	if err := root.Get(&host, "SELECT Host FROM mysql.user WHERE User = ? LIMIT 1", cfg.User); err != nil {
		t.Fatalf("find test user %s: %v", cfg.User, err)
	}
	for _, q := range []string{
		"CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4",
		fmt.Sprintf("GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%s'", name, cfg.User, host),
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if _, err := root.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	cfg.DBName = name
	cfg.ParseTime = true
	db, err := sqlx.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db.DB, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	return db
}

// eachDB runs f against a fresh SQLite and a fresh MySQL database.
func eachDB(t *testing.T, f func(t *testing.T, e *testDB)) {
	for _, name := range []string{SQLite, MySQL} {
		t.Run(name, func(t *testing.T) {
			var db *sqlx.DB
			if name == SQLite {
				db = openMigratedSQLite(t, filepath.Join(t.TempDir(), "trace.db"))
			} else {
				db = openMySQL(t)
			}
			f(t, newTestDB(t, db, name))
		})
	}
}

func newTestDB(t testing.TB, db *sqlx.DB, name string) *testDB {
	t.Helper()
	clk := clock.NewFake(t0)
	s, err := New(db, name, Options{Clock: clk, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return &testDB{name: name, db: db, d: s.d, clock: clk, store: s, dialect: name}
}

func (e *testDB) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if _, err := e.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// execution is a seed row of JOB_EXECUTION_LOG.
type execution struct {
	id, job, task, host, ip, source string
	item                            int
	success                         bool
	start                           time.Time
	complete                        *time.Time
	cause                           *string
	result                          *string // SUCCEEDED, FAILED, KILLED; nil: none written
}

func (e *testDB) addExecution(t testing.TB, x execution) {
	t.Helper()
	var complete any
	if x.complete != nil {
		complete = e.d.bindTime(*x.complete)
	}
	succ := 0
	if x.success {
		succ = 1
	}
	e.exec(t, "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, failure_cause, is_success, start_time, complete_time, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		x.id, x.job, x.task, x.host, x.ip, x.item, x.source, x.cause, succ, e.d.bindTime(x.start), complete, x.result)
}

func (e *testDB) addTrace(t testing.TB, id, job, orig, task, slave, source, execType, items, state, msg string, at time.Time) {
	t.Helper()
	e.exec(t, "INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		id, job, orig, task, slave, source, execType, items, state, msg, e.d.bindTime(at))
}
