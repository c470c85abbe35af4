package cache_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// BenchmarkCopyHeap is the live heap of the copy of a registry shaped like
// the simulated cluster's at 100,000 jobs (a job's config, a directory of
// running tasks whose tasks have ended for most jobs, a ready entry and a
// waiting reason for 80,000 of them), per job: the heap after loading it
// minus before, reported as "heap-B/job".
func BenchmarkCopyHeap(b *testing.B) {
	const jobs = 100_000
	value := make([]byte, 200)
	for b.Loop() {
		back := memory.New()
		c, err := cache.Open(b.Context(), back, cache.Options{})
		if err != nil {
			b.Fatal(err)
		}
		before := heapbench.Live()
		var ops []store.Op
		flush := func() {
			if err := c.Commit(b.Context(), ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
		for i := range jobs {
			job := fmt.Sprintf("sim-%06d", i)
			ops = append(ops, store.Put("/config/job/"+job, value))
			for s := range 3 {
				ops = append(ops, store.Put(fmt.Sprintf("/state/running/%s/t%d", job, s), value))
			}
			if i%5 != 0 {
				ops = append(ops, store.Put("/state/ready/"+job, value[:80]), store.Put("/state/waiting/ready/"+job, value))
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
		b.ReportMetric(float64(heapbench.Live()-before)/jobs, "heap-B/job")
		runtime.KeepAlive(c)
		_ = c.Close()
	}
}
