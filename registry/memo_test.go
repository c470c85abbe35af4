package registry

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// BenchmarkReadyQueueMemo reads a ready queue of 80,000 jobs of which 500
// changed since the last read (a large registry's backlog between two
// launch rounds), as the launcher does each round; memo-MB is the heap
// the memo holds then. namespaces=8: the jobs are eight namespaces'
// (read through the scheduler's view of every namespace).
// entries=100000: a takeover's first round at 100,000 jobs, the memo kept
// warm by the standby (scheduler.Catalog.QueueMemo).
func BenchmarkReadyQueueMemo(b *testing.B) {
	for _, spaces := range []int{0, 8} {
		b.Run(fmt.Sprintf("namespaces=%d", spaces), func(b *testing.B) { benchReadyQueueMemo(b, spaces, 80_000) })
	}
	b.Run("entries=100000", func(b *testing.B) { benchReadyQueueMemo(b, 0, 100_000) })
}

// benchReadyQueueMemo spreads the entries over spaces namespaces besides
// the default one (0: all the default namespace's, as before namespaces).
func benchReadyQueueMemo(b *testing.B, spaces, n int) {
	ctx := context.Background()
	kv := memory.New()
	r := New(kv)
	path := func(i int) string {
		if spaces == 0 {
			return fmt.Sprintf("%s/job-%06d", ReadyPath, i)
		}
		return fmt.Sprintf("%s/ns%d%s/job-%06d", NamespacesPath, i%spaces, ReadyPath, i)
	}
	for i := range spaces {
		if err := kv.Commit(ctx, store.Put(fmt.Sprintf("%s/ns%d", NamespacesPath, i), nil)); err != nil {
			b.Fatal(err)
		}
	}
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var ops []store.Op
	for i := range n {
		ops = append(ops, store.Put(path(i), mustJSON(queue.Ready{Count: 1, Since: base.Add(time.Duration(i%600) * time.Second)})))
		if len(ops) == 1000 {
			if err := kv.Commit(ctx, ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	var m QueueMemo
	heap0 := heapbench.Live()
	if _, err := r.Work().ReadyQueueMemo(ctx, &m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer func() { // what the memo holds: its entries and both reads' arrays
		b.ReportMetric(float64(heapbench.Live()-heap0)/1e6, "memo-MB")
		runtime.KeepAlive(&m)
	}()
	var cpu time.Duration // the reads' process CPU time (GC included): steady on a loaded machine, unlike ns/op
	defer func() { b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op") }()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ops = ops[:0]
		for k := range 500 {
			j := (i*500 + k) % n
			ops = append(ops, store.Put(path(j), mustJSON(queue.Ready{Count: 2, Since: base.Add(time.Duration(i) * time.Second)})))
		}
		if err := kv.Commit(ctx, ops...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := processCPU()
		q, err := r.Work().ReadyQueueMemo(ctx, &m)
		cpu += processCPU() - c0
		if err != nil || len(q) != n {
			b.Fatal(len(q), err)
		}
	}
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestReadyQueueMemoKeepsTheLastRead: a read stays as it was through the
// next read (the launcher compares the two), though the reads take turns
// in two arrays; each read holds exactly the queue at its time, also when
// the queue grows, shrinks and empties between reads.
func TestReadyQueueMemoKeepsTheLastRead(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	r := New(kv)
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	set := func(n int) {
		t.Helper()
		if err := kv.Commit(ctx, store.Delete(ReadyPath, store.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		var ops []store.Op
		for i := range n {
			ops = append(ops, store.Put(fmt.Sprintf("%s/job-%03d", ReadyPath, i), mustJSON(queue.Ready{Count: n, Since: base.Add(time.Duration(n-i) * time.Second)})))
		}
		if len(ops) > 0 {
			if err := kv.Commit(ctx, ops...); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(q []*queue.Ready, n int) {
		t.Helper()
		if len(q) != n {
			t.Fatalf("read %d entries, want %d", len(q), n)
		}
		for i, rd := range q { // oldest first: job-(n-1) … job-000
			if want := fmt.Sprintf("job-%03d", n-1-i); rd.Job != want || rd.Count != n {
				t.Fatalf("entry %d: %s count %d, want %s count %d", i, rd.Job, rd.Count, want, n)
			}
		}
	}
	var m QueueMemo
	var last []*queue.Ready
	lastN := 0
	for _, n := range []int{5, 300, 300, 7, 0, 2, 400, 1} {
		set(n)
		q, err := r.Work().ReadyQueueMemo(ctx, &m)
		if err != nil {
			t.Fatal(err)
		}
		check(q, n)
		check(last, lastN) // the read before is intact
		last, lastN = q, n
	}
}

// TestReadyQueueMemoEntriesStayAsRead: an entry whose value changed, or
// whose same value was written again (a new version), is a new entry in
// the next read; the read before still shows what it read.
func TestReadyQueueMemoEntriesStayAsRead(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	r := New(kv)
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	put := func(job string, count int) {
		t.Helper()
		if err := kv.Commit(ctx, store.Put(ReadyPath+"/"+job, mustJSON(queue.Ready{Count: count, Since: base}))); err != nil {
			t.Fatal(err)
		}
	}
	put("a", 1)
	put("b", 1)
	put("c", 1)
	var m QueueMemo
	first, err := r.Work().ReadyQueueMemo(ctx, &m)
	if err != nil || len(first) != 3 {
		t.Fatal(first, err)
	}
	before := make([]queue.Ready, len(first))
	for i, rd := range first {
		before[i] = *rd
	}
	put("a", 2) // a new value
	put("b", 1) // the same value, a new version
	second, err := r.Work().ReadyQueueMemo(ctx, &m)
	if err != nil || len(second) != 3 {
		t.Fatal(second, err)
	}
	for i, rd := range first {
		if !reflect.DeepEqual(*rd, before[i]) {
			t.Errorf("the first read's %s changed: %+v, was %+v", rd.Job, *rd, before[i])
		}
	}
	if second[0].Count != 2 || second[1].Version == first[1].Version || second[2] != first[2] {
		t.Errorf("second read: a %+v, b %+v (first %+v), c shared %v", *second[0], *second[1], *first[1], second[2] == first[2])
	}
}
