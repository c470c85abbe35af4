package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// copyShape writes into kv a registry shaped like the simulated
// cluster's at jobs jobs: a job's config, a directory of running tasks
// whose tasks have ended for most jobs (three still run for one job in
// fifty), a ready entry and a waiting reason for four jobs in five. Every
// value is a slice of its own, as the registry's encoders make them.
func copyShape(ctx context.Context, tb testing.TB, kv store.KV, jobs int) {
	var ops []store.Op
	flush := func() {
		if err := kv.Commit(ctx, ops...); err != nil {
			tb.Fatal(err)
		}
		ops = ops[:0]
	}
	value := func(n int) []byte { return make([]byte, n) }
	for i := range jobs {
		job := fmt.Sprintf("sim-%06d", i)
		ops = append(ops, store.Put("/config/job/"+job, value(200)))
		for s := range 3 {
			ops = append(ops, store.Put(fmt.Sprintf("/state/running/%s/t%d", job, s), value(200)))
		}
		if i%5 != 0 {
			ops = append(ops, store.Put("/state/ready/"+job, value(80)), store.Put("/state/waiting/ready/"+job, value(200)))
		}
		if len(ops) >= 500 {
			flush()
		}
	}
	flush()
	for i := range jobs {
		if i%50 == 0 {
			continue // a few jobs still run
		}
		job := fmt.Sprintf("sim-%06d", i)
		for s := range 3 {
			ops = append(ops, store.Delete(fmt.Sprintf("/state/running/%s/t%d", job, s), store.AnyVersion))
		}
		if len(ops) >= 500 {
			flush()
		}
	}
	flush()
}

// copyHeapPerJob is the live heap of the copy of a registry of copyShape
// at jobs jobs, per job: the heap after the cache loaded the backing
// store's subtree minus before (the backing store's own nodes are not
// counted), with the listings the catalog reads at a start made once, as
// a scheduler's copy holds them; and how many nodes the copy holds per
// job.
func copyHeapPerJob(tb testing.TB, jobs int) (perJob, nodesPerJob float64) {
	back := memory.New()
	copyShape(tb.Context(), tb, back, jobs)
	before := heapbench.Live()
	c, err := cache.Open(tb.Context(), back, cache.Options{Roots: []string{"/config", "/state"}})
	if err != nil {
		tb.Fatal(err)
	}
	nodes := 0
	for _, dir := range []string{"/config/job", "/state/ready", "/state/waiting/ready", "/state/running"} {
		kids, err := c.List(tb.Context(), dir)
		if err != nil {
			tb.Fatal(err)
		}
		nodes += len(kids)
	}
	after := heapbench.Live()
	runtime.KeepAlive(c)
	runtime.KeepAlive(back)
	_ = c.Close()
	return float64(after-before) / float64(jobs), float64(nodes) / float64(jobs)
}

// maxCopyHeapPerJob bounds the copy's heap per job of copyShape at 20,000
// jobs (its values alone are ≈ 450 B): 1,183 B with a flat map of paths
// beside the children's names, 904–906 B as a tree of names.
const maxCopyHeapPerJob = 1_000

// The copy holds a job of the simulated cluster's shape in less than
// maxCopyHeapPerJob bytes.
func TestCopyHeapPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 20,000 jobs")
	}
	per, _ := copyHeapPerJob(t, 20_000)
	t.Logf("copy: %.0f B/job", per)
	if per > maxCopyHeapPerJob {
		t.Fatalf("the copy holds %.0f B per job, more than its bound %d B", per, maxCopyHeapPerJob)
	}
}

// BenchmarkCopyHeap is the copy's live heap per job at 100,000 jobs of
// copyShape ("copy-B/job", copyHeapPerJob) and its nodes per job.
func BenchmarkCopyHeap(b *testing.B) {
	for b.Loop() {
		per, nodes := copyHeapPerJob(b, 100_000)
		b.ReportMetric(per, "copy-B/job")
		b.ReportMetric(nodes, "nodes/job")
	}
}

// BenchmarkCopyGet is a read of one node of the copy of copyShape at
// 20,000 jobs (a job's config, or its waiting reason, four levels down).
func BenchmarkCopyGet(b *testing.B) {
	const jobs = 20_000
	back := memory.New()
	copyShape(b.Context(), b, back, jobs)
	c, err := cache.Open(b.Context(), back, cache.Options{Roots: []string{"/config", "/state"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	paths := make([]string, 0, 2*jobs)
	for i := range jobs {
		paths = append(paths, fmt.Sprintf("/config/job/sim-%06d", i))
		if i%5 != 0 {
			paths = append(paths, fmt.Sprintf("/state/waiting/ready/sim-%06d", i))
		}
	}
	i := 0
	for b.Loop() {
		if _, err := c.Get(b.Context(), paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
