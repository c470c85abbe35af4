package etcd

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// BenchmarkFireBesideLoop times the commit of a fire instant (1,000
// entries and the leader's fence, as the producer commits at 60,000 jobs
// whose crons spread over the minute) while 8 writers commit small
// batches (5 puts, as the launch loop and the status updates do), on a
// 3-member loopback cluster: at etcd's default cap of 128 operations
// (the fire commit is guarded: it loses to the small commits, then locks
// them out) and at EmbeddedMaxTxnOps (one flat transaction). Reported:
// the fire commit's time (ns/op) and the small commits per second
// meanwhile.
func BenchmarkFireBesideLoop(b *testing.B) {
	for _, c := range []struct {
		name string
		cap  int
	}{{"cap-128", DefaultMaxTxnOps}, {"cap-embedded", EmbeddedMaxTxnOps}} {
		b.Run(c.name, func(b *testing.B) {
			cfgs := memberConfigs(b, 3)
			for i := range cfgs {
				cfgs[i].MaxTxnOps = uint(c.cap)
			}
			ms := startMembers(b, cfgs)
			kv := openStore(b, ms[0].Endpoints(), Options{MaxTxnOps: c.cap})
			if err := kv.Commit(b.Context(), store.Put("/term", nil)); err != nil {
				b.Fatal(err)
			}
			ctx, stop := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			var small atomic.Int64
			for w := range 8 {
				wg.Go(func() {
					for n := 0; ctx.Err() == nil; n++ {
						ops := make([]store.Op, 5)
						for i := range ops {
							ops[i] = store.Put(fmt.Sprintf("/loop/w%d/n%02d", w, (n*5+i)%50), []byte("launched"))
						}
						if err := kv.Commit(ctx, ops...); err == nil {
							small.Add(1)
						}
					}
				})
			}
			n := 0
			start := small.Load()
			b.ResetTimer()
			for b.Loop() {
				n++
				ops := make([]store.Op, 0, 1001)
				for j := range 1000 {
					ops = append(ops, store.Put(fmt.Sprintf("/ready/%d/%04d", n%3, j), []byte("fire")))
				}
				if err := kv.Commit(b.Context(), append(ops, store.Check("/term", 0))...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(small.Load()-start)/b.Elapsed().Seconds(), "small-commits/s")
			stop()
			wg.Wait()
		})
	}
}

// BenchmarkLaunchCommit times one launch round's commit as the leading
// scheduler makes it (launchRounds) through a member that is not the
// raft leader (the leader's member hands raft leadership on), on a
// 3-member loopback cluster, alone and with 4 writers of status-shaped
// commits (5 puts) beside it on the same store. Variants: planned from a
// linearizable read (fresh) or from the member's applied state
// (LocalPlans); over gRPC or in-process (Options.Member).
func BenchmarkLaunchCommit(b *testing.B) {
	for _, c := range []struct {
		local, inproc bool
		writers       int
	}{{false, false, 0}, {true, false, 0}, {false, true, 0}, {true, true, 0}, {false, false, 4}, {true, false, 4}, {false, true, 4}, {true, true, 4}} {
		name := fmt.Sprintf("plans=fresh/writers=%d", c.writers)
		if c.local {
			name = fmt.Sprintf("plans=local/writers=%d", c.writers)
		}
		if c.inproc {
			name = "client=inprocess/" + name
		}
		b.Run(name, func(b *testing.B) {
			on := follower(startMembers(b, embeddedConfigs(b, 3)))
			o := Options{MaxTxnOps: EmbeddedMaxTxnOps, LocalPlans: c.local}
			if c.inproc {
				o.Member = on
			}
			launchRounds(b, openStore(b, on.Endpoints(), o), c.writers)
		})
	}
}

// BenchmarkLaunchCommitStores is launchRounds alone on the embedded
// store's SQLite (full sync, its durable setting), on one etcd member
// and through a follower of three, as the scheduler's store calls its
// own member: the registry's share of a launch on each, for the
// arithmetic of three replicas on one machine (docs/benchmarks.md).
func BenchmarkLaunchCommitStores(b *testing.B) {
	b.Run("sqlite-full", func(b *testing.B) {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "state.db"), sqlite.Options{Sync: sqlite.SyncFull})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		launchRounds(b, s, 0)
	})
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("etcd-%d", n), func(b *testing.B) {
			on := follower(startMembers(b, embeddedConfigs(b, n)))
			launchRounds(b, openStore(b, nil, Options{MaxTxnOps: EmbeddedMaxTxnOps, Member: on, LocalPlans: true}), 0)
		})
	}
}

// embeddedConfigs are memberConfigs with the scheduler's transaction cap.
func embeddedConfigs(b *testing.B, n int) []MemberConfig {
	cfgs := memberConfigs(b, n)
	for i := range cfgs {
		cfgs[i].MaxTxnOps = EmbeddedMaxTxnOps
	}
	return cfgs
}

// follower is a member that does not lead raft (the only one if alone).
func follower(ms []*Member) *Member {
	for _, m := range ms {
		if !m.IsLeader() {
			return m
		}
	}
	return ms[0]
}

// launchRounds times launch rounds' commits on kv: each round first puts
// 32 ready entries (200 B; untimed, as the producer's fire commit), then
// commits the round (timed): 32 running entries created (400 B), the 32
// ready entries deleted and the term's fence checked. With writers,
// that many status-shaped commits (5 puts of 400 B) go on beside it.
// Reported: the round's commit time (ns/op), the process's CPU per round
// (every member in it, the store, the writers, the ready commit:
// cpu-ms/round) and the small commits per second.
func launchRounds(b *testing.B, kv store.KV, writers int) {
	if err := kv.Commit(b.Context(), store.Put("/term", nil)); err != nil {
		b.Fatal(err)
	}
	entry, readyEntry := bytes.Repeat([]byte("r"), 400), bytes.Repeat([]byte("q"), 200)
	ctx, stop := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	var small atomic.Int64
	for w := range writers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				ops := make([]store.Op, 5)
				for i := range ops {
					ops[i] = store.Put(fmt.Sprintf("/status/w%d/n%02d", w, (n*5+i)%50), entry)
				}
				if err := kv.Commit(ctx, ops...); err == nil {
					small.Add(1)
				}
			}
		})
	}
	round := func(n int) []store.Op {
		ops := make([]store.Op, 0, 65)
		for j := range 32 {
			ops = append(ops, store.Create(fmt.Sprintf("/state/running/r%d/j%02d/0", n, j), entry),
				store.Delete(fmt.Sprintf("/state/ready/r%d/j%02d", n, j), store.AnyVersion))
		}
		return append(ops, store.Check("/term", 0))
	}
	ready := func(n int) []store.Op {
		ops := make([]store.Op, 32)
		for j := range ops {
			ops[j] = store.Put(fmt.Sprintf("/state/ready/r%d/j%02d", n, j), readyEntry)
		}
		return ops
	}
	n := 0
	start := small.Load()
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		n++
		b.StopTimer()
		if err := kv.Commit(b.Context(), ready(n)...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := kv.Commit(b.Context(), round(n)...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(small.Load()-start)/b.Elapsed().Seconds(), "small-commits/s")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/round")
	stop()
	wg.Wait()
}

// processCPU is the process's CPU time so far (user and system): the
// members', the store's and the benchmark's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
