package etcd

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
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
