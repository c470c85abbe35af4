package metrics

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrapeState is one scrape of the registry's state at the
// simulated cluster's scale: 100,000 jobs, 80,000 of them in the ready
// queue, 83,000 with a directory of running tasks, 2,000 of those running
// 5 shards each; read from an in-memory copy (store/cache), as the
// scheduler reads it.
func BenchmarkScrapeState(b *testing.B) {
	const jobsN, readyN, dirsN, runningN = 100_000, 80_000, 83_000, 2_000
	kv, err := cache.Open(b.Context(), memory.New(), cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { kv.Close() })
	reg := registry.New(kv)
	since := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	var ops []store.Op
	flush := func() {
		if err := kv.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range jobsN {
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = fmt.Sprintf("sim-%06d", i), "app", "0 * * * * ?", 5, 0.1, 64
		ops = append(ops, store.Put(registry.JobsPath+"/"+j.JobName, mustJSON(j)))
		if i < readyN {
			ops = append(ops, store.Put(registry.ReadyPath+"/"+j.JobName, mustJSON(queue.Ready{Count: 1, Since: since})))
		}
		switch {
		case i < runningN:
			for s := range 5 {
				ops = append(ops, store.Put(registry.RunningPath+"/"+j.JobName+"/"+jobs.MetaKey(j.JobName, s), mustJSON(task.Entry{TaskID: jobs.MetaKey(j.JobName, s) + "@-@READY@-@agent-1@-@x",
					AgentID: "agent-1", ExecutorID: "app@-@agent-1", State: "TASK_RUNNING"})))
			}
		case i < dirsN: // a directory whose tasks have ended
			ops = append(ops, store.Put(registry.RunningPath+"/"+j.JobName, nil))
		}
		if len(ops) >= 1000 {
			flush()
		}
	}
	flush()
	m := New()
	m.Leading(true)
	st := &state{m: m, reg: reg, clock: clock.NewFake(since.Add(time.Minute)), errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})}
	for b.Loop() {
		ch := make(chan prometheus.Metric, 16)
		done := make(chan int)
		go func() {
			n := 0
			for range ch {
				n++
			}
			done <- n
		}()
		st.Collect(ch)
		close(ch)
		if n := <-done; n < 3*runningN {
			b.Fatalf("%d metrics", n)
		}
	}
}

// mustJSON encodes a value the benchmark writes straight into the store
// (the registry's layout: registry.JobsPath, ReadyPath, RunningPath).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
