package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// heapJobs is how many jobs the per-job heap figures are taken over.
const heapJobs = 20_000

// maxCatalogHeapPerJob bounds what the leader's job catalog holds per job
// of the simulated cluster's shape (a decoded config and its stored
// fingerprint in one map keyed by the job's name; crons and the strings
// jobs repeat shared, shareStrings): measured 588 B loaded and 589 B grown
// by changes under -race, 589 and 589 B without (go1.26, amd64; 704 and
// 721 B under -race while a second
// map of the fingerprints keyed by stored path stood beside it, ≈ 48 B
// more before the repeated strings were shared). The catalog is the
// leader's one decoded copy of the jobs, read by every loop (the deadline
// watcher, the launcher, the producer): a second map of the jobs, a second
// copy, or a per-job field grown large, fails this.
const maxCatalogHeapPerJob = 680

// simJobs stores n jobs shaped like the simulated cluster's (bench
// simJob, with the API's defaults) in kv.
func simJobs(t testing.TB, kv store.KV, n int) {
	t.Helper()
	var ops []store.Op
	for i := range n {
		j := jobs.Default()
		j.JobName, j.AppName = fmt.Sprintf("sim-%06d", i), fmt.Sprintf("sim_app_%d", i%10)
		j.JobExecutionType, j.Cron = jobs.Transient, fmt.Sprintf("%d * * * * ?", i%60)
		j.ShardingTotalCount, j.CPUCount, j.MemoryMB = 1+i%10, 0.1, 64
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, store.Put(registry.JobsPath+"/"+j.JobName, b))
		if len(ops) == 500 || i == n-1 {
			if err := kv.Commit(context.Background(), ops...); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
}

// catalogHeapPerJob is the live heap a catalog of n jobs holds, per job:
// loaded at once (a term's or a standby's start), or grown by one change
// a job (changes: the jobs registered while it ran, as a running
// scheduler's catalog and every standby's hold them).
func catalogHeapPerJob(t testing.TB, n int, changes bool) float64 {
	kv := memory.New()
	simJobs(t, kv, n)
	before := heapbench.Live()
	c := NewCatalog(registry.New(kv))
	if changes {
		for i := range n {
			if err := c.apply(context.Background(), registry.ConfigChange{Kind: registry.ConfigJob, Name: fmt.Sprintf("sim-%06d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := c.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	per := float64(heapbench.Live()-before) / float64(n)
	if len(c.JobNames()) != n {
		t.Fatalf("%d jobs loaded, want %d", len(c.JobNames()), n)
	}
	runtime.KeepAlive(c)
	return per
}

// The leader's catalog stays within its per-job bound.
func TestCatalogHeapPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 20,000 jobs")
	}
	for _, changes := range []bool{false, true} {
		per := catalogHeapPerJob(t, heapJobs, changes)
		t.Logf("catalog (grown by changes: %v): %.0f B/job", changes, per)
		if per > maxCatalogHeapPerJob {
			t.Fatalf("the catalog (grown by changes: %v) holds %.0f B per job, more than its bound %d B", changes, per, maxCatalogHeapPerJob)
		}
	}
}

// BenchmarkCatalogHeap reports the catalog's live heap per job, loaded
// at once and grown by a change a job.
func BenchmarkCatalogHeap(b *testing.B) {
	for _, changes := range []bool{false, true} {
		b.Run(fmt.Sprintf("changes=%v", changes), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(catalogHeapPerJob(b, heapJobs, changes), "heap-B/job")
			}
		})
	}
}
