package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// TestReadyTasksCarryPositionAndEstimate: each waiting execution has its
// position in the namespace's order and an estimated start from the
// running work's expected ends (the p90 of its runs when history knows
// them, else its timeout).
func TestReadyTasksCarryPositionAndEstimate(t *testing.T) {
	typicals := func(o *api.Options, _ *api.Credentials) {
		o.Jobs.Typicals = &deadline.TypicalCache{Clock: o.Clock, Source: func(_ context.Context, job string) ([]time.Duration, error) {
			if job == "runner" {
				return []time.Duration{2 * time.Minute, 2 * time.Minute, 2 * time.Minute}, nil
			}
			return nil, nil // too few runs: the timeout
		}}
	}
	e := newEnv(t, typicals)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	for _, n := range []string{"runner", "waiter", "second"} {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register",
			`{"jobName":"`+n+`","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":2,"cpuCount":0.5,"memoryMB":32,"timeoutSeconds":300}`)
	}
	for item := range 2 {
		b, _ := json.Marshal(task.Entry{TaskID: "r" + string(rune('0'+item)), LaunchedAt: t0, State: task.Running})
		if err := e.kv.Commit(t.Context(), store.Put(registry.RunningPath+"/runner/"+jobs.MetaKey("runner", item), b)); err != nil {
			t.Fatal(err)
		}
	}
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "waiter")
	e.clock.Advance(time.Second)
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "second")
	rows := decode[[]struct {
		JobName        string    `json:"jobName"`
		Position       int       `json:"position"`
		EstimatedStart time.Time `json:"estimatedStart"`
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	// runner's shards end at t0+2m (p90); waiter then runs 5m (timeout).
	want := map[string]struct {
		pos int
		at  time.Time
	}{"waiter": {1, t0.Add(2 * time.Minute)}, "second": {2, t0.Add(7 * time.Minute)}}
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if w := want[r.JobName]; r.Position != w.pos || !r.EstimatedStart.Equal(w.at) {
			t.Errorf("%s: position %d at %v, want %d at %v", r.JobName, r.Position, r.EstimatedStart, w.pos, w.at)
		}
	}
}

// TestReadyTasksEstimateSharesTheCluster: a namespace with no limit or
// guarantee draws on what the cluster (the engine's agents) leaves of the
// running work and of other namespaces' unused guarantees.
func TestReadyTasksEstimateSharesTheCluster(t *testing.T) {
	typicals := func(o *api.Options, _ *api.Credentials) {
		o.Jobs.Typicals = &deadline.TypicalCache{Clock: o.Clock, Source: func(_ context.Context, job string) ([]time.Duration, error) {
			if job == "runner" {
				return []time.Duration{2 * time.Minute, 2 * time.Minute, 2 * time.Minute}, nil
			}
			return nil, nil
		}}
	}
	e := newEnv(t, typicals)
	e.ops.agents = []engine.Agent{{ID: "a1", CPUs: 2, MemMB: 4096}, {ID: "a2", CPUs: 2, MemMB: 4096}}
	e.must(http.StatusCreated, http.MethodPut, "/api/namespaces/team", `{"guarantee":{"cpuCount":1,"memoryMB":1024}}`)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	for _, n := range []string{"runner", "waiter", "second", "third"} {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register",
			`{"jobName":"`+n+`","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":2,"cpuCount":0.5,"memoryMB":32,"timeoutSeconds":300}`)
	}
	for item := range 2 {
		b, _ := json.Marshal(task.Entry{TaskID: "r" + string(rune('0'+item)), LaunchedAt: t0, State: task.Running})
		if err := e.kv.Commit(t.Context(), store.Put(registry.RunningPath+"/runner/"+jobs.MetaKey("runner", item), b)); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Second)
	for _, n := range []string{"waiter", "second", "third"} {
		e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", n)
	}
	rows := decode[[]struct {
		JobName        string    `json:"jobName"`
		Position       int       `json:"position"`
		EstimatedStart time.Time `json:"estimatedStart"`
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	// 4 CPUs less runner's 1 and team's unused guarantee of 1: 2 free now
	// (second and third: triggered at one instant, they are in name
	// order); waiter when runner ends at t0+2m (its p90).
	now := t0.Add(time.Second)
	want := map[string]time.Time{"second": now, "third": now, "waiter": t0.Add(2 * time.Minute)}
	if len(rows) != 3 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if w := want[r.JobName]; !r.EstimatedStart.Equal(w) {
			t.Errorf("%s: at %v, want %v", r.JobName, r.EstimatedStart, w)
		}
	}
}

// TestReadyTasksEstimateCountsARetiringTask: a DAEMON shard moving with an
// overlap holds its old task's share beside its replacement until the
// overlap ends (startBy): the work waiting behind the move is estimated
// to start then, where nothing else known would free anything.
func TestReadyTasksEstimateCountsARetiringTask(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"d","appName":"app","jobExecutionType":"DAEMON","cron":"0/5 * * * * ?","shardingTotalCount":1,"cpuCount":0.5,"memoryMB":32,"moveOverlapSeconds":60}`)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"waiter","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.5,"memoryMB":32,"timeoutSeconds":300}`)
	old := task.Entry{TaskID: "old", State: task.Running, LaunchedAt: t0.Add(-time.Hour)}
	if err := e.reg.Change().Launch("d", 0, old).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	running, err := e.reg.Work().RunningOf(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	ch := e.reg.Change()
	if err := ch.Retire(ctx, "d", 0, running[0], t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Change().Launch("d", 0, task.Entry{TaskID: "new", State: task.Staging, LaunchedAt: t0}).DropReady("d").Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "waiter")
	rows := decode[[]struct {
		JobName        string    `json:"jobName"`
		EstimatedStart time.Time `json:"estimatedStart"`
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	if len(rows) != 1 || rows[0].JobName != "waiter" || !rows[0].EstimatedStart.Equal(t0.Add(time.Minute)) {
		t.Fatalf("ready rows %+v, want waiter's estimated at the overlap's end %v", rows, t0.Add(time.Minute))
	}
}
