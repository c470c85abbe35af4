package registry

import (
	"math"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// A namespace's HTTP jobs without an app hold their shards and, once per
// agent, their namespace's HTTP executor (app.HTTPOnly), as the launch
// round counts them; another namespace's HTTP executor is not theirs.
func TestInUseCountsTheNamespacesHTTPExecutor(t *testing.T) {
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	r := New(kv)
	ctx := t.Context()
	for _, ns := range []string{"pay", "search"} {
		if _, err := r.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.JobType, j.CPUCount, j.MemoryMB = "ping", jobs.TypeHTTP, 0.05, 16
		j.Props = map[string]string{"http.url": "http://127.0.0.1:1/" + ns}
		if err := r.In(ns).Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	ch := r.Change()
	for item, agent := range []string{"a1", "a1", "a2"} { // two shards on a1 share its executor
		id := jobs.NewTaskID("pay~ping", item, jobs.KindReady, agent).String()
		ch = ch.Launch("pay~ping", item, task.Entry{TaskID: id, AgentID: agent, ExecutorID: jobs.ExecutorID(jobs.HTTPApp("pay"), agent), State: task.Running, LaunchedAt: t0})
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	h := app.HTTPOnly()
	want := namespace.Resources{CPUCount: 3*0.05 + 2*h.CPUCount, MemoryMB: 3*16 + 2*h.MemoryMB}
	got, err := r.In("pay").Tenancy().InUse(ctx)
	if err != nil || math.Abs(got.CPUCount-want.CPUCount) > 1e-9 || math.Abs(got.MemoryMB-want.MemoryMB) > 1e-9 {
		t.Fatalf("pay in use %+v (%v), want %+v", got, err, want)
	}
	if got, err := r.In("search").Tenancy().InUse(ctx); err != nil || got != (namespace.Resources{}) {
		t.Fatalf("search in use %+v (%v), want nothing", got, err)
	}
}
