package scheduler

import (
	"slices"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/task"
)

// TestIdleExecutors: of a namespace's executors up, those with a task of
// their app on their agent are busy; the others are idle and listed with
// their app's resources (the namespace's HTTP executor's, app.HTTPOnly);
// another namespace's are not listed.
func TestIdleExecutors(t *testing.T) {
	r := newRig(t)
	r.addApp("pay~etl", 0.1, 64)
	r.addApp("search~idx", 0.05, 32)
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "pay~nightly", "pay~etl", 0.5, 64, 1
	if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(r.reg)
	mustSync(t, c, r.ctx)
	execs := map[offers.ExecutorKey]bool{
		{App: "pay~etl", AgentID: "a1"}: true, {App: "pay~etl", AgentID: "a2"}: true, {App: "pay~etl", AgentID: "a3"}: false,
		{App: "search~idx", AgentID: "a1"}: true, {App: jobs.HTTPApp("search"), AgentID: "a2"}: true,
	}
	running := map[string]map[int]task.Entry{"pay~nightly": {0: {TaskID: "t", AgentID: "a1"}}}
	got := idleExecutors(execs, running, c, "pay")
	if len(got) != 1 || got[0] != (IdleExecutor{App: "etl", AgentID: "a2", CPUs: 0.1, MemMB: 64}) {
		t.Errorf("pay's idle executors: %+v; want etl's on a2", got)
	}
	// search's HTTP executor counts against search, as the launch round counts it.
	want := []IdleExecutor{{App: "elasticjob-http", AgentID: "a2", CPUs: app.HTTPOnlyCPUs, MemMB: app.HTTPOnlyMemoryMB}, {App: "idx", AgentID: "a1", CPUs: 0.05, MemMB: 32}}
	if got := idleExecutors(execs, running, c, "search"); !slices.Equal(got, want) {
		t.Errorf("search's idle executors: %+v; want %+v", got, want)
	}
}
