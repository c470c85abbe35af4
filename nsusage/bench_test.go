package nsusage_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// BenchmarkSample is one leader's sample (every 10 s) of 100 namespaces,
// each with 10 jobs of 10 running shards: 10,000 running tasks.
func BenchmarkSample(b *testing.B) {
	ctx := context.Background()
	kv := memory.New()
	defer kv.Close()
	reg := registry.New(kv)
	for n := range 100 {
		ns := fmt.Sprintf("team%03d", n)
		if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			b.Fatal(err)
		}
		r := reg.In(ns)
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/x.tgz", "bin/start.sh"
		if err := r.Config().AddApp(ctx, a); err != nil {
			b.Fatal(err)
		}
		ch := reg.Change()
		for k := range 10 {
			j := jobs.Default()
			j.JobName, j.AppName, j.Cron, j.ShardingTotalCount = fmt.Sprintf("job%d", k), "etl", "0 0 * * * ?", 10
			if err := r.Config().AddJob(ctx, j); err != nil {
				b.Fatal(err)
			}
			full := ns + "~" + j.JobName
			for item := range 10 {
				id := jobs.NewTaskID(full, item, jobs.KindReady, "agent-1").String()
				ch = ch.Launch(full, item, task.Entry{TaskID: id, AgentID: "agent-1", ExecutorID: ns + "~etl@-@agent-1", State: task.Running, LaunchedAt: t0})
			}
		}
		if err := ch.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	s := nsusage.Sampler{Registry: reg, Series: nsusage.New(), Clock: clock.NewFake(t0), Log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
