package etcd

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// liveHeap is the heap in use after two collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// raftLogHeap is the heap a member's raft log holds after n writes of
// size bytes each: a member alone, with the scheduler's defaults.
func raftLogHeap(t testing.TB, n, size int) int64 {
	cfg := memberConfigs(t, 1)[0]
	m, err := StartMember(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cli := m.inProcess()
	val := strings.Repeat("x", size)
	before := liveHeap()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if _, err := cli.Put(t.Context(), fmt.Sprintf("/raftlog/%d", i%64), val); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return liveHeap() - before
}

// TestMemberRaftLogHeapIsBounded: a member keeps its last
// DefaultCatchUpEntries raft entries in memory, not etcd's 5,000. After
// 3,000 writes of 16 KiB (a launch round's or a history batch's order of
// size) it holds 25 MiB, about a thousand of them; with etcd's default it
// held all 3,000 (57 MiB). The scheduler's entries are whole commits, so
// at 100,000 jobs etcd's default held hundreds of MB on every replica.
func TestMemberRaftLogHeapIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 47 MiB through a member")
	}
	const n, size = 3000, 16 << 10
	const bound = 40 << 20 // 1,100 entries kept with their encodings, and the member's own structures
	held := raftLogHeap(t, n, size)
	t.Logf("heap held after %d writes of %d KiB: %.1f MiB (bound %d MiB, the writes %.1f MiB)",
		n, size>>10, float64(held)/(1<<20), bound>>20, float64(n*size)/(1<<20))
	if held > bound {
		t.Fatalf("the member holds %.1f MiB after %d writes of %d KiB, more than the bound of its catch-up entries, %d MiB",
			float64(held)/(1<<20), n, size>>10, bound>>20)
	}
}

// revisionHistory writes rounds of the scheduler's churn (a task's
// running entry created, updated twice, deleted: four key writes, 300
// bytes each) through a member alone, n rounds of 256 tasks, and returns
// the heap and backend bytes each key write leaves until compaction, and
// what is left of them after compaction to the last revision.
func revisionHistory(t testing.TB, rounds int) (heapPer, dbPer, heapAfter, dbAfter float64) {
	cfg := memberConfigs(t, 1)[0]
	cfg.AutoCompactionRetention = "0" // compacted by hand below
	cfg.CatchUpEntries = 10           // the raft log, bounded apart, out of the way
	m, err := StartMember(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cli := m.inProcess()
	ctx := t.Context()
	val := strings.Repeat("v", 300)
	dbSize := func() int64 {
		st, err := cli.Status(ctx, m.Endpoints()[0])
		if err != nil {
			t.Fatal(err)
		}
		return st.DbSizeInUse
	}
	h0, d0 := liveHeap(), dbSize()
	writes := 0
	for r := range rounds {
		for _, step := range []string{"create", "update", "update", "delete"} {
			for batch := range 4 { // transactions of 64
				ops := make([]clientv3.Op, 0, 64)
				for i := batch * 64; i < (batch+1)*64; i++ {
					key := fmt.Sprintf("/elasticjob-cloud/n/4/state/running/job-%d/task-%d-%d", i, r, i)
					if step == "delete" {
						ops = append(ops, clientv3.OpDelete(key))
					} else {
						ops = append(ops, clientv3.OpPut(key, val))
					}
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					t.Fatal(err)
				}
				writes += len(ops)
			}
		}
	}
	h1, d1 := liveHeap(), dbSize()
	resp, err := cli.Get(ctx, "/none")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	h2, d2 := liveHeap(), dbSize()
	w := float64(writes)
	return float64(h1-h0) / w, float64(d1-d0) / w, float64(h2-h0) / w, float64(d2-d0) / w
}

// BenchmarkMemberRevisionHistory: what each key write of the scheduler's
// churn costs a member until the periodic compaction removes it
// (etcd_compaction_retention), in its heap (the key index; the raft log
// is bounded apart) and its backend (mapped: part of the RSS), and what is
// left after compaction. At a few thousand key writes a second (100,000
// jobs), an hour's retention holds millions of them.
func BenchmarkMemberRevisionHistory(b *testing.B) {
	for b.Loop() {
		heapPer, dbPer, heapAfter, dbAfter := revisionHistory(b, 100)
		b.ReportMetric(heapPer, "heap-B/write")
		b.ReportMetric(dbPer, "db-B/write")
		b.ReportMetric(heapAfter, "heap-B/write-compacted")
		b.ReportMetric(dbAfter, "db-B/write-compacted")
	}
}
