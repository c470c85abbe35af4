package deadline

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

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
