package nsusage_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// TestSamplerRecordsEveryNamespace: the leader's loop resets the series,
// samples at once and every Every, each namespace's running shards and
// executor (one per executor, however many shards it runs). In a synctest
// bubble: synctest.Wait returns once the loop has sampled and waits on its
// timer (the injected clock's), so nothing polls.
func TestSamplerRecordsEveryNamespace(t *testing.T) {
	synctest.Test(t, testSamplerRecordsEveryNamespace)
}

func testSamplerRecordsEveryNamespace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := memory.New()
	defer kv.Close()
	reg := registry.New(kv)
	if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	r := reg.In("pay")
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "etl", "http://h/x.tgz", "bin/start.sh", 0.5, 64
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.Cron, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "nightly", "etl", "0 0 * * * ?", 2, 1.5, 256
	if err := r.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	ch := reg.Change()
	for item := range 2 {
		id := jobs.NewTaskID("pay~nightly", item, jobs.KindReady, "agent-1").String()
		ch = ch.Launch("pay~nightly", item, task.Entry{TaskID: id, AgentID: "agent-1", ExecutorID: "pay~etl@-@agent-1", State: task.Running, LaunchedAt: t0})
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	clk := clock.NewFake(t0)
	series := nsusage.New()
	series.Record(t0, map[string]namespace.Resources{"pay": {CPUCount: 99}}) // a term before
	done := make(chan error, 1)
	go func() {
		done <- nsusage.Sampler{Registry: reg, Series: series, Clock: clk, Log: slog.New(slog.DiscardHandler)}.Run(ctx)
	}()
	synctest.Wait() // the first sample is taken, the next timer armed
	if got := series.Snapshot("pay").Samples; len(got) != 1 {
		t.Fatalf("pay has %d samples after the loop began; want 1", len(got))
	}
	if at, ok := clk.Pending(); !ok || !at.Equal(t0.Add(nsusage.Every)) {
		t.Fatalf("the sampler's next timer: %v %v; want %v", at, ok, t0.Add(nsusage.Every))
	}
	clk.Advance(nsusage.Every)
	synctest.Wait()
	got := series.Snapshot("pay").Samples
	if len(got) != 2 {
		t.Fatalf("pay has %d samples; want 2", len(got))
	}
	want := nsusage.Sample{At: t0.Add(nsusage.Every), CPUCount: 2*1.5 + 0.5, MemoryMB: 2*256 + 64}
	if got[0].CPUCount != want.CPUCount || got[1] != want {
		t.Errorf("pay's samples %+v; want two of %+v", got, want)
	}
	if d := series.Snapshot("default").Samples; len(d) != 2 || d[0].CPUCount != 0 {
		t.Errorf("default's samples %+v; want two empty ones", d)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
