package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

// registration is what registering one job commits: its config and its
// initial state, two small ops.
func registration(n int64) []store.Op {
	name := fmt.Sprintf("job-%09d", n)
	return []store.Op{
		store.Create("/config/job/"+name, []byte(`{"jobName":"`+name+`","cron":"0/5 * * * * ?","shardingTotalCount":3}`)),
		store.Put("/state/ready/"+name, []byte("1")),
	}
}

func benchOpen(b *testing.B, sync sqlite.Sync) *sqlite.Store {
	return open(b, filepath.Join(b.TempDir(), "state.db"), sqlite.Options{Sync: sync})
}

func syncModes(b *testing.B, fn func(b *testing.B, s *sqlite.Store)) {
	for _, m := range []struct {
		name string
		sync sqlite.Sync
	}{{"full", sqlite.SyncFull}, {"normal", sqlite.SyncNormal}} {
		b.Run(m.name, func(b *testing.B) { fn(b, benchOpen(b, m.sync)) })
	}
}

func reportCommits(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

func BenchmarkCommitSerial(b *testing.B) {
	syncModes(b, func(b *testing.B, s *sqlite.Store) {
		var n int64
		for b.Loop() {
			n++
			if err := s.Commit(b.Context(), registration(n)...); err != nil {
				b.Fatal(err)
			}
		}
		reportCommits(b)
	})
}

func BenchmarkCommitParallel(b *testing.B) {
	syncModes(b, func(b *testing.B, s *sqlite.Store) {
		var n atomic.Int64
		b.SetParallelism(16) // API handlers: many concurrent requests per CPU
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.Commit(b.Context(), registration(n.Add(1))...); err != nil {
					b.Fatal(err)
				}
			}
		})
		reportCommits(b)
	})
}

func BenchmarkList100k(b *testing.B) {
	const children = 100_000
	s := benchOpen(b, sqlite.SyncNormal)
	for start := 0; start < children; start += 1000 {
		ops := make([]store.Op, 0, 1000)
		for i := start; i < start+1000; i++ {
			ops = append(ops, store.Create(fmt.Sprintf("/config/job/job-%06d", i), []byte(`{"cron":"0 * * * * ?"}`)))
		}
		if err := s.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		nodes, err := s.List(b.Context(), "/config/job")
		if err != nil || len(nodes) != children {
			b.Fatalf("List = %d nodes, %v", len(nodes), err)
		}
	}
}
