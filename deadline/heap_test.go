package deadline

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// watcherHeapJobs jobs with a start deadline, a fifth of them waiting.
const watcherHeapJobs = 20_000

// maxWatcherHeapPerJob bounds what a watcher keeps between its passes per
// job: the first start estimate of each waiting execution, no config
// (the configs are the leader's catalog's). Measured 45 B per job (a
// fifth waiting); 656 B while the watcher kept its own decoded copy.
const maxWatcherHeapPerJob = 150

func watcherHeapPerJob(t testing.TB) float64 {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0)
	ops := []store.Op{store.Put("/leader/a", mustJSON(t, "a"))}
	for i := range watcherHeapJobs {
		name := fmt.Sprintf("sim-%06d", i)
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron, j.StartDeadlineSeconds = name, "a", fmt.Sprintf("%d * * * * ?", i%60), 3600
		ops = append(ops, store.Put(registry.JobsPath+"/"+name, mustJSON(t, j)))
		if i%5 == 0 {
			ops = append(ops, store.Put(registry.ReadyPath+"/"+name, mustJSON(t, queue.Ready{Count: 1, Since: t0})))
		}
		if len(ops) >= 500 || i == watcherHeapJobs-1 {
			if err := kv.Commit(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	before := heapbench.Live()
	w := term(kv, clk, "/leader/a", &recorder{})
	for range 2 {
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(heapbench.Live()-before) / watcherHeapJobs
	runtime.KeepAlive(w)
	return per
}

// A watcher keeps nothing per job between passes but the estimates of the
// executions waiting.
func TestWatcherHeapPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 20,000 jobs")
	}
	per := watcherHeapPerJob(t)
	t.Logf("watcher: %.0f B/job kept between passes", per)
	if per > maxWatcherHeapPerJob {
		t.Fatalf("the watcher keeps %.0f B per job between passes, more than its bound %d B", per, maxWatcherHeapPerJob)
	}
}

// BenchmarkWatcherHeap reports what a watcher keeps between passes, per job.
func BenchmarkWatcherHeap(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(watcherHeapPerJob(b), "heap-B/job")
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// backlogWatcher stores n jobs (a tenth with a start deadline), the first
// waiting of them ready, on a cluster of 8,000 CPUs with no running work:
// every waiting execution gets an estimate. It returns a watcher that has
// made one pass (the typical durations filled, the API's) and what a new
// watcher keeps after its first pass, per waiting execution.
func backlogWatcher(t testing.TB, n, waiting int) (*Watcher, *clock.Fake, float64) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0)
	ops := []store.Op{store.Put("/leader/a", mustJSON(t, "a"))}
	cat := mapCatalog{}
	for i := range n {
		name := fmt.Sprintf("sim-%06d", i)
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron = name, "a", fmt.Sprintf("%d * * * * ?", i%60)
		if i%10 == 0 {
			j.StartDeadlineSeconds = 3600
		}
		j.CPUCount, j.MemoryMB, j.ShardingTotalCount, j.TimeoutSeconds = 0.1, 64, 1+i%10, 60
		ops = append(ops, store.Put(registry.JobsPath+"/"+name, mustJSON(t, j)))
		cat[name] = j
		if i < waiting {
			ops = append(ops, store.Put(registry.ReadyPath+"/"+name, mustJSON(t, queue.Ready{Count: 1, Since: t0.Add(time.Duration(i) * time.Millisecond)})))
		}
		if len(ops) >= 500 || i == n-1 {
			if err := kv.Commit(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	cluster := agents{{ID: "a1", CPUs: 8000, MemMB: 32 << 20}}
	w := term(kv, clk, "/leader/a", &recorder{})
	w.Inventory, w.Catalog = cluster, cat
	if err := w.Pass(ctx); err != nil { // the typical durations cached
		t.Fatal(err)
	}
	typ := w.Typical // shared with the API, filled
	before := heapbench.Live()
	w = term(kv, clk, "/leader/a", &recorder{})
	w.Inventory, w.Catalog, w.Typical = cluster, cat, typ
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	kept := float64(heapbench.Live()-before) / float64(waiting)
	if got := w.tracker.Len(); got != waiting {
		t.Fatalf("%d estimates noted, want %d", got, waiting)
	}
	return w, clk, kept
}

// maxWatcherHeapPerWaiting bounds what a watcher keeps between passes per
// waiting execution with an estimate (its first estimate): measured 126 B
// at 18,000 waiting, 106 B at 45,000 (BenchmarkWatcherBacklog); 163 B and
// 137 B with the tracker's string keys.
const maxWatcherHeapPerWaiting = 145

// TestWatcherHeapPerWaiting: the first estimates of a backlog stay within
// their bound per waiting execution.
func TestWatcherHeapPerWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 20,000 jobs")
	}
	_, _, kept := backlogWatcher(t, 20_000, 18_000)
	t.Logf("watcher: %.0f B per waiting execution kept between passes", kept)
	if kept > maxWatcherHeapPerWaiting {
		t.Fatalf("the watcher keeps %.0f B per waiting execution, more than its bound %d B", kept, maxWatcherHeapPerWaiting)
	}
}

// BenchmarkWatcherBacklog: a pass of the watcher over 50,000 jobs with
// 45,000 waiting (a backlog as at 100,000 jobs), every waiting execution
// estimated: what it keeps between passes per waiting execution (the
// first estimates; the typical durations are the API's too) and what a
// pass allocates per waiting execution (reading the queues, the places,
// the tracker's sweep).
func BenchmarkWatcherBacklog(b *testing.B) {
	const waiting = 45_000
	ctx := context.Background()
	w, clk, kept := backlogWatcher(b, 50_000, waiting)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		clk.Advance(time.Second)
		if err := w.Pass(ctx); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)/waiting, "alloc-B/waiting")
	b.ReportMetric(kept, "kept-B/waiting")
	runtime.KeepAlive(w)
}

// mapCatalog is a loaded catalog of the jobs in it (the leader's, in a
// benchmark).
type mapCatalog map[string]jobs.Config

func (m mapCatalog) Job(key string) (jobs.Config, bool) { c, ok := m[key]; return c, ok }
func (mapCatalog) Loaded() bool                         { return true }
