package deadline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/store/memory"
)

// The watcher reads configs from the leader's catalog (no copy of its
// own), namespaced jobs included, and skips its passes until the catalog
// is loaded: a pass before would take every job for gone and forget the
// alerts recorded for them.
func TestWatcherReadsTheLeadersCatalog(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	clk := clock.NewFake(t0.Add(2 * time.Minute))
	put(t, kv, "/leader/a", "a")
	put(t, kv, registry.JobsPath+"/report", jobs.Config{JobName: "report", AppName: "a", StartDeadlineSeconds: 60,
		CPUCount: 1, MemoryMB: 128, ShardingTotalCount: 1})
	put(t, kv, registry.ReadyPath+"/report", queue.Ready{Count: 1, Since: t0})
	put(t, kv, registry.NamespacesPath+"/team", map[string]any{"limit": map[string]float64{"cpuCount": 2, "memoryMB": 1024}})
	put(t, kv, registry.NamespacesPath+"/team"+registry.JobsPath+"/etl", jobs.Config{JobName: "etl", StartDeadlineSeconds: 60, CPUCount: 1, MemoryMB: 64, ShardingTotalCount: 1})
	put(t, kv, registry.NamespacesPath+"/team"+registry.ReadyPath+"/etl", queue.Ready{Count: 1, Since: t0})

	sink := &recorder{}
	w := term(kv, clk, "/leader/a", sink)
	cat := scheduler.NewCatalog(registry.New(kv))
	w.Catalog = cat
	if err := w.Pass(ctx); !errors.Is(err, errCatalogNotLoaded) || len(sink.alerts) != 0 {
		t.Fatalf("a pass before the catalog is loaded: %v %+v", err, sink.alerts)
	}
	if err := cat.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, a := range sink.alerts {
		got[a.Namespace+"/"+a.Job] = a.Kind == observe.DeadlineStart
	}
	if len(sink.alerts) != 2 || !got["default/report"] || !got["team/etl"] {
		t.Fatalf("alerts %+v, want the start alerts of report and team/etl", sink.alerts)
	}
}
