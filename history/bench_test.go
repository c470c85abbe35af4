package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/jmoiron/sqlx"
)

// benchVersion keys the cached seeded database: bump it when the seed
// changes. Migrations added later are applied to the cached file on open.
const benchVersion = "v2"

const benchRows = 1_000_000

var benchBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// seedExecutions bulk-inserts n rows: 100 jobs, 90% successes, start times
// spread over 30 days, in transactions of 50,000 rows.
func seedExecutions(b *testing.B, db *sqlx.DB, d dialect, n int) {
	b.Helper()
	const batch = 50_000
	span := 30 * 24 * time.Hour
	for done := 0; done < n; {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.Prepare("INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time, complete_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		if err != nil {
			b.Fatal(err)
		}
		for i := done; i < min(done+batch, n); i++ {
			job := fmt.Sprintf("job_%03d", (i*7919)%100)
			start := benchBase.Add(time.Duration(i) * (span / time.Duration(n)))
			ok := 1
			if i%10 == 7 {
				ok = 0
			}
			if _, err := st.Exec(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), job, fmt.Sprintf("%s@-@%d@-@READY@-@agent@-@%d", job, i%4, i),
				fmt.Sprintf("host%d", i%20), fmt.Sprintf("10.0.0.%d", i%20), i%4, "NORMAL_TRIGGER", ok,
				d.bindTime(start), d.bindTime(start.Add(3*time.Second))); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		done = min(done+batch, n)
	}
}

// benchSQLite opens the cached 1M-row database, seeding it on first use.
func benchSQLite(b *testing.B) *sqlx.DB {
	b.Helper()
	path := filepath.Join(os.TempDir(), "ejcloud-history-bench-"+benchVersion+".db")
	ready := path + ".ready"
	if _, err := os.Stat(ready); err != nil {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Remove(p)
		}
		db := openSQLite(b, path)
		t := time.Now()
		seedExecutions(b, db, dialect{SQLite}, benchRows)
		if _, err := db.Exec("ANALYZE"); err != nil {
			b.Fatal(err)
		}
		b.Logf("seeded %d rows in %v", benchRows, time.Since(t).Round(time.Millisecond))
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		return db
	}
	return openSQLite(b, path)
}

func benchSearch(b *testing.B, db *sqlx.DB, name string) {
	s, err := New(db, name, Options{Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	q := view.Query{Page: 1, PerPage: 10, Sort: "start_time", Order: "desc",
		Filters: map[string]string{"jobName": "job_042", "isSuccess": "true"},
		Start:   benchBase.Add(10 * 24 * time.Hour), End: benchBase.Add(17 * 24 * time.Hour)}
	ctx := context.Background()
	first, err := s.Executions(ctx, q)
	if err != nil || len(first.Rows) != 10 {
		b.Fatalf("search: %d rows, %v", len(first.Rows), err)
	}
	for range 20 { // warm the cache: the figures are for a steady server
		if _, err := s.Executions(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		if _, err := s.Executions(ctx, q); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(first.Total), "matches")
}

// BenchmarkSearchExecutions1M searches 1,000,000 executions by job, result
// and a 7-day range, page 1 of 10 newest first, and reports p50 (target ≤ 50 ms).
func BenchmarkSearchExecutions1M(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchSearch(b, benchSQLite(b), SQLite) })
	b.Run("mysql", func(b *testing.B) {
		db := openMySQL(b)
		t := time.Now()
		seedExecutions(b, db, dialect{MySQL}, benchRows)
		db.MustExec("ANALYZE TABLE JOB_EXECUTION_LOG")
		b.Logf("seeded %d rows in %v", benchRows, time.Since(t).Round(time.Millisecond))
		benchSearch(b, db, MySQL)
	})
}
