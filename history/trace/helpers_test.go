package trace

import (
	"context"
	"io"
	"log"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// failsafe bounds every wait so a bug fails a test instead of hanging it.
const failsafe = 30 * time.Second

var t0 = time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)

// backend is a database the writer tests run against.
type backend struct {
	name    string
	dialect string
	dsn     func(t *testing.T) string
}

var backends = []backend{
	{"sqlite", dialectSQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "trace.db") }},
	{"mysql", dialectMySQL, func(t *testing.T) string { return testproxy.MySQL(t) }},
}

func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	return ctx
}

// open starts a writer with a fake clock and closes it at cleanup.
func open(t *testing.T, opt Options) (*Writer, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	if opt.Clock == nil {
		opt.Clock = clk
	}
	if opt.SpoolDir == "" {
		opt.SpoolDir = filepath.Join(t.TempDir(), "spool")
	}
	if opt.ConnectTimeout == 0 {
		// A database that is up but slow to answer on a loaded machine (the first
		// connection and the migrations took past the 3 s default in a full run) is not
		// what these tests are about; the tests of an unavailable one set their own bound.
		opt.ConnectTimeout = time.Minute
	}
	w, err := Open(ctxT(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w, clk
}

func mustFlush(t *testing.T, w *Writer) {
	t.Helper()
	if err := w.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// Row shapes, column for column as the original's tables.
type traceRow struct {
	ID             string    `db:"id"`
	JobName        string    `db:"job_name"`
	OriginalTaskID string    `db:"original_task_id"`
	TaskID         string    `db:"task_id"`
	SlaveID        string    `db:"slave_id"`
	Source         string    `db:"source"`
	ExecutionType  string    `db:"execution_type"`
	ShardingItem   string    `db:"sharding_item"`
	State          string    `db:"state"`
	Message        *string   `db:"message"`
	CreationTime   time.Time `db:"creation_time"`
}

type execRow struct {
	ID              string     `db:"id"`
	JobName         string     `db:"job_name"`
	TaskID          string     `db:"task_id"`
	Hostname        string     `db:"hostname"`
	IP              string     `db:"ip"`
	ShardingItem    int        `db:"sharding_item"`
	ExecutionSource string     `db:"execution_source"`
	FailureCause    *string    `db:"failure_cause"`
	IsSuccess       int        `db:"is_success"`
	StartTime       *time.Time `db:"start_time"`
	CompleteTime    *time.Time `db:"complete_time"`
	TriggeredBy     *string    `db:"triggered_by"`
	NominalAt       *time.Time `db:"nominal_at"`
	Result          *string    `db:"result"`
}

func db(t *testing.T, w *Writer) *sqlx.DB {
	t.Helper()
	d, err := w.QueryDB()
	if err != nil {
		t.Fatal(err)
	}
	return d.Unsafe() // the rows below are the original's columns: the namespace column is read where it is tested
}

func traces(t *testing.T, w *Writer) []traceRow {
	t.Helper()
	var rows []traceRow
	if err := db(t, w).Select(&rows, "SELECT * FROM JOB_STATUS_TRACE_LOG ORDER BY creation_time, id"); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].CreationTime = rows[i].CreationTime.UTC()
	}
	return rows
}

func execs(t *testing.T, w *Writer) map[string]execRow {
	t.Helper()
	var rows []execRow
	if err := db(t, w).Select(&rows, "SELECT * FROM JOB_EXECUTION_LOG"); err != nil {
		t.Fatal(err)
	}
	m := map[string]execRow{}
	for _, r := range rows {
		if r.StartTime != nil {
			u := r.StartTime.UTC()
			r.StartTime = &u
		}
		if r.CompleteTime != nil {
			u := r.CompleteTime.UTC()
			r.CompleteTime = &u
		}
		m[r.ID] = r
	}
	return m
}

func count(t *testing.T, w *Writer, table string) int {
	t.Helper()
	var n int
	if err := db(t, w).Get(&n, "SELECT COUNT(*) FROM "+table); err != nil {
		t.Fatal(err)
	}
	return n
}

// statusEvents makes n distinct status traces with ids prefix-i.
func statusEvents(prefix string, n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = StatusTrace{ID: NewID(prefix, itoa(i)), JobName: "job", TaskID: "job@-@0@-@READY@-@agent-1@-@" + itoa(i),
			SlaveID: "agent-1", Source: SourceScheduler, ExecutionType: ExecutionReady, ShardingItem: "0", State: "TASK_RUNNING",
			CreationTime: t0.Add(time.Duration(i) * time.Millisecond)}
	}
	return evs
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func ids(t *testing.T, w *Writer) []string {
	t.Helper()
	var out []string
	if err := db(t, w).Select(&out, "SELECT id FROM JOB_STATUS_TRACE_LOG"); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// segments lists the spool's segment files.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func gaugeValue(t *testing.T, w *Writer) float64 {
	t.Helper()
	return testutilGauge(w.m.spooled)
}

// holdSQLiteWriteLock takes the database's write lock from another
// connection (the SQLite way of "the database is unavailable") and
// returns its release.
func holdSQLiteWriteLock(t *testing.T, path string) func() {
	t.Helper()
	d, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		d.Close()
	}
}

// The proxy tests cut connections on purpose: keep the driver's log quiet.
func init() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) }
