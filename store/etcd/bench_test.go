package etcd

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

// puts64 is one commit of 64 puts of 100-byte values (the issue's
// measured transaction), over 640 nodes so that keys repeat every tenth
// commit.
func puts64(n int) []store.Op {
	ops := make([]store.Op, 64)
	value := make([]byte, 100)
	for i := range ops {
		ops[i] = store.Put(fmt.Sprintf("/bench/d%d/n%03d", i%8, (n%10)*64+i), value)
	}
	return ops
}

func benchCommit64(b *testing.B, kv store.KV) {
	for i := range 10 { // every node exists: each put is an overwrite
		if err := kv.Commit(b.Context(), puts64(i)...); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		n++
		if err := kv.Commit(b.Context(), puts64(n)...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommit64 commits one transaction of 64 puts at a time on one
// embedded member, through one member of a 3-member loopback cluster,
// and (for comparison on the same machine) on the embedded SQLite store.
func BenchmarkCommit64(b *testing.B) {
	b.Run("etcd-1", func(b *testing.B) {
		m := startMembers(b, memberConfigs(b, 1))[0]
		benchCommit64(b, openStore(b, m.Endpoints(), Options{}))
	})
	b.Run("etcd-3", func(b *testing.B) {
		ms := startMembers(b, memberConfigs(b, 3))
		benchCommit64(b, openStore(b, ms[0].Endpoints(), Options{}))
	})
	b.Run("sqlite-full", func(b *testing.B) {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "state.db"), sqlite.Options{Sync: sqlite.SyncFull})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		benchCommit64(b, s)
	})
}

// BenchmarkCommit64Parallel is BenchmarkCommit64 from 8 writers at once,
// each on nodes of its own (their commits do not conflict), on one member
// and through one member of three: etcd batches concurrent proposals
// into one raft entry and one fsync.
func BenchmarkCommit64Parallel(b *testing.B) {
	run := func(b *testing.B, kv store.KV) {
		var writer atomic.Int64
		b.SetParallelism(4) // 2 CPUs here: 8 writers
		b.ResetTimer()      // not the cluster's start
		b.RunParallel(func(pb *testing.PB) {
			w, n := writer.Add(1), 0
			for pb.Next() {
				n++
				ops := puts64(n)
				for i := range ops {
					ops[i].Path = fmt.Sprintf("/w%d%s", w, ops[i].Path)
				}
				if err := kv.Commit(b.Context(), ops...); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	}
	b.Run("etcd-1", func(b *testing.B) {
		m := startMembers(b, memberConfigs(b, 1))[0]
		run(b, openStore(b, m.Endpoints(), Options{}))
	})
	b.Run("etcd-3", func(b *testing.B) {
		ms := startMembers(b, memberConfigs(b, 3))
		run(b, openStore(b, ms[0].Endpoints(), Options{}))
	})
}
