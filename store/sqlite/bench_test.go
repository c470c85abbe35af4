package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// startCPU resets the benchmark's timer and returns what stops it and
// tells the process's CPU time (user and system) since.
func startCPU(b *testing.B) func() time.Duration {
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	return func() time.Duration {
		b.StopTimer()
		var ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		return time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	}
}

// fill commits the ops of jobs 0..n-1 (what job(i) returns), 1,000 jobs
// to a commit.
func fill(b *testing.B, s *sqlite.Store, n int, job func(i int) []store.Op) {
	for start := 0; start < n; start += 1000 {
		var ops []store.Op
		for i := start; i < min(n, start+1000); i++ {
			ops = append(ops, job(i)...)
		}
		if err := s.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
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
	fill(b, s, children, func(i int) []store.Op {
		return []store.Op{store.Create(fmt.Sprintf("/config/job/job-%06d", i), []byte(`{"cron":"0 * * * * ?"}`))}
	})
	for b.Loop() {
		nodes, err := s.List(b.Context(), "/config/job")
		if err != nil || len(nodes) != children {
			b.Fatalf("List = %d nodes, %v", len(nodes), err)
		}
	}
}

// BenchmarkCommitScattered commits what a launch round or a status batch
// of a large cluster commits: 8 updates of state entries of random jobs,
// in a registry the size of the simulated cluster's (100,000 job configs,
// 100,000 ready entries and 80,000 waiting entries, ≈ 100 MB), durable
// (SyncFull, the scheduler's setting). Reported: commits/s and the
// process's CPU per commit ("cpu-µs/commit").
func BenchmarkCommitScattered(b *testing.B) {
	const jobs = 100_000
	cfg := []byte(`{"jobName":"x","appName":"app","cron":"0/5 * * * * ?","shardingTotalCount":5,` +
		`"shardingItemParameters":"0=a,1=b,2=c,3=d,4=e","jobParameter":"","cpuCount":0.1,"memoryMB":64,` +
		`"jobExecutionType":"TRANSIENT","jobType":"SCRIPT","description":"",` +
		`"props":{"script.command.line":"bin/run.sh --a-long-argument --and-another-one"},"failover":true,` +
		`"misfire":true,"maxRetries":3,"retryBackoffSeconds":10,"executionTimeoutSeconds":600}`)
	state := func(i, v int) []byte {
		return fmt.Appendf(nil, `{"count":%d,"since":"2026-11-23T12:00:00Z","notBefore":"2026-11-23T12:00:01Z","items":[0,1,2,3,4],"v":%d}`, i%7, v)
	}
	s := open(b, filepath.Join(b.TempDir(), "state.db"), sqlite.Options{Sync: sqlite.SyncFull})
	fill(b, s, jobs, func(i int) []store.Op {
		name := fmt.Sprintf("job-%06d", i)
		ops := []store.Op{store.Create("/config/job/"+name, cfg), store.Create("/state/ready/"+name, state(i, 0))}
		if i%5 != 0 {
			ops = append(ops, store.Create("/state/waiting/"+name, state(i, 0)))
		}
		return ops
	})
	rng := rand.New(rand.NewPCG(1, 2))
	cpu := startCPU(b)
	v := 0
	for b.Loop() {
		ops := make([]store.Op, 0, 8)
		for range 4 {
			v++
			i := rng.IntN(jobs)
			name := fmt.Sprintf("job-%06d", i)
			ops = append(ops, store.Put("/state/ready/"+name, state(i, v)))
			if i%5 != 0 {
				ops = append(ops, store.Put("/state/waiting/"+name, state(i, v)))
			}
		}
		if err := s.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
	}
	used := cpu()
	reportCommits(b)
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/commit")
}

// BenchmarkCommitRound commits what a launch round of the simulated
// cluster commits in one transaction: 640 ops on independent paths of a
// registry of 100,000 ready entries (384 puts on existing entries, 128
// creates of running entries and the deletes of the last round's 128),
// durable (SyncFull). Reported: the process's CPU per op ("cpu-µs/op").
func BenchmarkCommitRound(b *testing.B) {
	const jobs, puts, runs = 100_000, 384, 128
	entry := func(i, v int) []byte {
		return fmt.Appendf(nil, `{"count":%d,"since":"2026-11-23T12:00:00Z","items":[0,1,2,3,4],"v":%d}`, i%7, v)
	}
	s := open(b, filepath.Join(b.TempDir(), "state.db"), sqlite.Options{Sync: sqlite.SyncFull})
	fill(b, s, jobs, func(i int) []store.Op {
		return []store.Op{store.Create(fmt.Sprintf("/state/ready/job-%06d", i), entry(i, 0))}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	cpu := startCPU(b)
	round := 0
	for b.Loop() {
		round++
		ops := make([]store.Op, 0, puts+2*runs)
		seen := make(map[int]bool, puts)
		for len(seen) < puts {
			i := rng.IntN(jobs)
			if !seen[i] {
				seen[i] = true
				ops = append(ops, store.Put(fmt.Sprintf("/state/ready/job-%06d", i), entry(i, round)))
			}
		}
		for j := range runs {
			ops = append(ops, store.Create(fmt.Sprintf("/state/running/r%d-%03d", round, j), entry(j, round)))
			if round > 1 {
				ops = append(ops, store.Delete(fmt.Sprintf("/state/running/r%d-%03d", round-1, j), store.AnyVersion))
			}
		}
		if err := s.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
	}
	used := cpu()
	b.ReportMetric(float64(used.Nanoseconds())/1e3/float64(b.N*(puts+2*runs)), "cpu-µs/op")
}
