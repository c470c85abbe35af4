package trace

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
)

type auditRow struct {
	ID           string    `db:"id"`
	CreationTime time.Time `db:"creation_time"`
	User         string    `db:"user_name"`
	Role         string    `db:"role"`
	Address      string    `db:"address"`
	Method       string    `db:"method"`
	Route        string    `db:"route"`
	TargetKind   string    `db:"target_kind"`
	Target       string    `db:"target"`
	Summary      string    `db:"summary"`
	Status       int       `db:"status"`
}

func audits(t *testing.T, w *Writer) []auditRow {
	t.Helper()
	var rows []auditRow
	if err := db(t, w).Select(&rows, "SELECT * FROM AUDIT_LOG ORDER BY creation_time, id"); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].CreationTime = rows[i].CreationTime.UTC()
	}
	return rows
}

// Audit rows keep every field (clipped to the column widths, valid UTF-8)
// and a replayed id adds no row.
func TestAuditRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, clk := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		long := strings.Repeat("é", 2100) + "\xff"
		a1 := Audit{ID: "a1", User: "root", Role: "admin", Address: "127.0.0.1", Method: "POST", Route: "/api/app",
			TargetKind: "app", Target: "demo", Summary: long, Status: 200, CreationTime: t0.Add(1234567 * time.Microsecond)}
		a2 := Audit{ID: "a2", User: "anonymous", Address: "::1", Method: "DELETE", Route: "/api/job/:jobName/deregister",
			TargetKind: "job", Target: strings.Repeat("j", 300), Status: 403}
		w.Record(a1)
		w.Record(a2)
		w.Record(a1) // a replay
		mustFlush(t, w)
		want := []auditRow{
			{ID: "a2", CreationTime: clk.Now().UTC(), User: "anonymous", Address: "::1", Method: "DELETE",
				Route: "/api/job/:jobName/deregister", TargetKind: "job", Target: strings.Repeat("j", 255), Status: 403},
			{ID: "a1", CreationTime: t0.Add(1234 * time.Millisecond), User: "root", Role: "admin", Address: "127.0.0.1", Method: "POST",
				Route: "/api/app", TargetKind: "app", Target: "demo", Summary: strings.Repeat("é", 2000), Status: 200},
		}
		got := audits(t, w)
		if len(got) != len(want) {
			t.Fatalf("%d audit rows, want %d", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				g, wr := got[i], want[i]
				g.Summary, wr.Summary = fmt.Sprint(len([]rune(g.Summary)), " chars"), fmt.Sprint(len([]rune(wr.Summary)), " chars")
				t.Errorf("audit row %d\n got %+v\nwant %+v", i, g, wr)
			}
		}
	})
}

// Audit rows recorded while the database is down are durable once Sync
// returns, survive a restart in the spool, and are written when the
// database is back: none is lost, none doubled.
func TestAuditSurvivesOutageAndRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		spool := filepath.Join(t.TempDir(), "spool")
		via, release := dsn, func() {}
		if b.dialect == dialectMySQL {
			proxy := testproxy.NewProxy(t, testproxy.Target(t, dsn))
			via = testproxy.Via(t, dsn, proxy.Addr())
			defer proxy.Set(testproxy.Refuse)
			release = func() { proxy.Set(testproxy.Forward) }
			w0, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool})
			if err != nil {
				t.Fatal(err)
			}
			mustFlush(t, w0) // the schema exists; then the database goes away
			w0.Close(ctxT(t))
			proxy.Set(testproxy.Refuse)
		} else {
			via = "file:" + dsn + "?_pragma=busy_timeout(100)&_pragma=journal_mode(WAL)&_txlock=immediate"
			w0, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool})
			if err != nil {
				t.Fatal(err)
			}
			w0.Close(ctxT(t))
			release = holdSQLiteWriteLock(t, dsn)
		}
		w1, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool, ConnectTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			w1.Record(Audit{ID: NewID("outage", itoa(i)), User: "root", Role: "admin", Method: "POST", Route: "/api/job/trigger",
				TargetKind: "job", Target: "j" + itoa(i), Status: 204})
		}
		if err := w1.Sync(ctxT(t)); err != nil {
			t.Fatalf("Sync with the database down: %v", err)
		}
		cctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		w1.Close(cctx)
		cancel()
		release()
		w2, err := Open(ctxT(t), Options{Dialect: b.dialect, DSN: via, SpoolDir: spool})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close(context.Background())
		mustFlush(t, w2)
		if n := count(t, w2, "AUDIT_LOG"); n != 20 {
			t.Fatalf("%d audit rows after the outage and restart, want 20", n)
		}
	})
}
