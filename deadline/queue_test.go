package deadline

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

func TestPlaces(t *testing.T) {
	small := func(name string) jobs.Config {
		return jobs.Config{JobName: name, CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 600}
	}
	cfg := cfgs(small("a~run"), small("a~w1"), small("a~w2"), small("b~w"), small("a~f"))
	typ := func(job string) estimate.Typical {
		if job == "a~run" {
			return estimate.Of([]time.Duration{5 * time.Minute, 5 * time.Minute, 5 * time.Minute})
		}
		return estimate.Of([]time.Duration{2 * time.Minute, 2 * time.Minute, 2 * time.Minute})
	}
	st := State{
		Ready:    []queue.Ready{{Job: "a~w2", Since: t0.Add(time.Second)}, {Job: "a~w1", Since: t0}, {Job: "b~w", Since: t0}},
		Failover: []queue.Failover{{Job: "a~f", Item: 0, Since: t0.Add(time.Minute)}},
		Running:  map[string]map[int]task.Entry{"a~run": {0: {TaskID: "r", LaunchedAt: t0}}},
	}
	p := Places(t0, st, cfg, typ)
	// Namespace a: the failover shard first, then w1, then w2, one slot
	// freed at t0+5m by a~run, each then running 2 minutes.
	want := map[string]Place{
		FailoverKey("a~f", 0): {"a", 1, t0.Add(5 * time.Minute)},
		ReadyKey("a~w1"):      {"a", 2, t0.Add(7 * time.Minute)},
		ReadyKey("a~w2"):      {"a", 3, t0.Add(9 * time.Minute)},
		ReadyKey("b~w"):       {"b", 1, time.Time{}}, // nothing of b runs: not known
	}
	for k, w := range want {
		if g := p[k]; g.Namespace != w.Namespace || g.Position != w.Position || !g.EstimatedStart.Equal(w.EstimatedStart) {
			t.Errorf("%s: got %+v, want %+v", k, g, w)
		}
	}
}

// A namespace's capacity (its limit, else its guarantee) less what it runs
// is free now: the first entry that fits it starts at once.
func TestPlacesWithCapacity(t *testing.T) {
	c := jobs.Config{JobName: "a~x", CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 60}
	cfg := func(k string) (jobs.Config, bool) { c.JobName = k; return c, true }
	typ := func(string) estimate.Typical { return estimate.Typical{} }
	st := State{
		Ready:    []queue.Ready{{Job: "a~w1", Since: t0}, {Job: "a~w2", Since: t0.Add(time.Second)}},
		Running:  map[string]map[int]task.Entry{"a~run": {0: {LaunchedAt: t0}}},
		Capacity: map[string]estimate.Res{"a": {CPUs: 2, MemMB: 1000}},
	}
	p := Places(t0, st, cfg, typ)
	if !p["a~w1"].EstimatedStart.Equal(t0) || !p["a~w2"].EstimatedStart.Equal(t0.Add(time.Minute)) {
		t.Fatalf("%+v", p)
	}
	limit := namespace.Record{Name: "a", Guarantee: &namespace.Resources{CPUCount: 1}, Limit: &namespace.Resources{CPUCount: 4, MemoryMB: 8}}
	if r, ok := CapacityOf(limit); !ok || r.CPUs != 4 {
		t.Fatalf("limit first: %v %v", r, ok)
	}
	if _, ok := CapacityOf(namespace.Record{Name: "b"}); ok {
		t.Fatal("a capacity without a limit or guarantee")
	}
}

// BenchmarkPlaces100k: the watcher's and the API's estimate over a
// backlog of 100,000 ready executions in 100 namespaces (1,000 jobs each
// with a capacity), 10,000 running tasks.
func BenchmarkPlaces100k(b *testing.B) {
	cfg := func(k string) (jobs.Config, bool) {
		return jobs.Config{JobName: k, CPUCount: 0.5, MemoryMB: 64, ShardingTotalCount: 2, TimeoutSeconds: 600}, true
	}
	typ := func(string) estimate.Typical {
		return estimate.Of([]time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute})
	}
	st := State{Running: map[string]map[int]task.Entry{}, Capacity: map[string]estimate.Res{}}
	for n := range 100 {
		ns := fmt.Sprintf("team-%02d", n)
		st.Capacity[ns] = estimate.Res{CPUs: 50, MemMB: 6400}
		for j := range 1000 {
			st.Ready = append(st.Ready, queue.Ready{Job: ns + "~job" + strconv.Itoa(j), Count: 1, Since: t0.Add(time.Duration(j) * time.Second)})
		}
		for j := range 50 {
			st.Running[ns+"~run"+strconv.Itoa(j)] = map[int]task.Entry{0: {LaunchedAt: t0}, 1: {LaunchedAt: t0}}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if p := Places(t0, st, cfg, typ); len(p) != 100_000 {
			b.Fatal(len(p))
		}
	}
}

// A DAEMON shard moving with a declared overlap: its old task (retiring)
// holds its share of the namespace's capacity beside the running work:
// until its overlap ends (startBy) once its replacement is launched, until
// the replacement starts while that waits; so the work waiting behind a
// move is estimated at the instant the move frees its namespace.
func TestPlacesCountRetiringTasks(t *testing.T) {
	feed := func(shards int) jobs.Config {
		return jobs.Config{JobName: "a~feed", CPUCount: 1, MemoryMB: 100, ShardingTotalCount: shards, JobExecutionType: jobs.Daemon}
	}
	batch := jobs.Config{JobName: "a~batch", CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 600}
	other := jobs.Config{JobName: "a~other", CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 300}
	typ := func(string) estimate.Typical { return estimate.Typical{} }
	old := func(item int) map[int]registry.Retiring {
		return map[int]registry.Retiring{item: {Entry: task.Entry{TaskID: "old", LaunchedAt: t0.Add(-time.Hour)}, Since: t0, StartBy: t0.Add(2 * time.Minute)}}
	}
	capacity := func(cpus float64) map[string]estimate.Res {
		return map[string]estimate.Res{"a": {CPUs: cpus, MemMB: 10000}}
	}
	for _, tc := range []struct {
		name string
		cfg  Jobs
		st   State
		want map[string]time.Time
	}{
		{
			// 2 CPUs: the replacement runs 1 (no end known) and the old task
			// 1 until its startBy: batch starts then, not now
			name: "replacement launched", cfg: cfgs(feed(1), batch),
			st: State{Ready: []queue.Ready{{Job: "a~batch", Since: t0}}, Capacity: capacity(2),
				Running:  map[string]map[int]task.Entry{"a~feed": {0: {TaskID: "new", LaunchedAt: t0}}},
				Retiring: map[string]map[int]registry.Retiring{"a~feed": old(0)}},
			want: map[string]time.Time{"a~batch": t0.Add(2 * time.Minute)},
		},
		{
			// 2 CPUs: other (ends at 5 min) and the old task hold them; the
			// older batch starts when other ends, the replacement after batch
			name: "replacement waiting behind older work", cfg: cfgs(feed(1), batch, other),
			st: State{Ready: []queue.Ready{{Job: "a~batch", Since: t0}, {Job: "a~feed", Since: t0.Add(time.Second)}}, Capacity: capacity(2),
				Running:  map[string]map[int]task.Entry{"a~other": {0: {TaskID: "o", LaunchedAt: t0}}},
				Retiring: map[string]map[int]registry.Retiring{"a~feed": old(0)}},
			want: map[string]time.Time{"a~batch": t0.Add(5 * time.Minute), "a~feed": t0.Add(15 * time.Minute)},
		},
		{
			// 1.5 CPUs: the old task holds 1, and the replacement needs 1
			// more: it waits at the limit until it is raised (or the move
			// is given up), not known, where it was said to start at once
			name: "replacement waiting at the limit", cfg: cfgs(feed(1)),
			st: State{Ready: []queue.Ready{{Job: "a~feed", Since: t0}}, Capacity: capacity(1.5),
				Retiring: map[string]map[int]registry.Retiring{"a~feed": old(0)}},
			want: map[string]time.Time{"a~feed": {}},
		},
		{
			// 3 CPUs: feed's shard 0 runs, shard 1's old task holds 1; the
			// replacement needs that one shard, and its start stops the old
			// task, so batch behind it starts at once too
			name: "replacement frees its old task", cfg: cfgs(feed(2), batch),
			st: State{Ready: []queue.Ready{{Job: "a~feed", Since: t0}, {Job: "a~batch", Since: t0.Add(time.Second)}}, Capacity: capacity(3),
				Running:  map[string]map[int]task.Entry{"a~feed": {0: {TaskID: "f0", LaunchedAt: t0}}},
				Retiring: map[string]map[int]registry.Retiring{"a~feed": old(1)}},
			want: map[string]time.Time{"a~feed": t0, "a~batch": t0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Places(t0, tc.st, tc.cfg, typ)
			for k, want := range tc.want {
				if g := p[k]; !g.EstimatedStart.Equal(want) {
					t.Errorf("%s: %v, want %v", k, g.EstimatedStart, want)
				}
			}
		})
	}
}

// A namespace with no capacity of its own shares what the cluster leaves:
// its total less every namespace's running work (Running and Elsewhere)
// and the unused part of every guarantee.
func TestPlacesSharedCluster(t *testing.T) {
	c := jobs.Config{CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 60}
	cfg := func(k string) (jobs.Config, bool) { c.JobName = k; return c, true }
	typ := func(string) estimate.Typical { return estimate.Typical{} }
	st := State{
		Ready:   []queue.Ready{{Job: "a~w1", Since: t0}, {Job: "a~w2", Since: t0.Add(time.Second)}, {Job: "a~w3", Since: t0.Add(2 * time.Second)}},
		Running: map[string]map[int]task.Entry{"a~run": {0: {LaunchedAt: t0}}, "g~run": {0: {LaunchedAt: t0}}},
		// 6 CPUs: a runs 1, g runs 1 of its guarantee of 2 (1 kept for
		// it), and another namespace runs 2 (seen by name, no end): 1 free
		Cluster:   estimate.Res{CPUs: 6, MemMB: 10000},
		Guarantee: map[string]estimate.Res{"g": {CPUs: 2}},
		Capacity:  map[string]estimate.Res{"g": {CPUs: 2, MemMB: 10000}},
		Elsewhere: map[string]estimate.Res{"o": {CPUs: 2, MemMB: 200}},
	}
	p := Places(t0, st, cfg, typ)
	// w1 now; w2 when a~run ends (its timeout, 1 min; g's end does not
	// free the pool: its guarantee keeps it); w3 when w1 ends
	for k, want := range map[string]time.Time{"a~w1": t0, "a~w2": t0.Add(time.Minute), "a~w3": t0.Add(time.Minute)} {
		if g := p[k]; !g.EstimatedStart.Equal(want) {
			t.Errorf("%s: %v, want %v", k, g.EstimatedStart, want)
		}
	}
	// without the cluster's total: nothing free now, as before
	st.Cluster = estimate.Res{}
	if g := Places(t0, st, cfg, typ)["a~w1"]; !g.EstimatedStart.Equal(t0.Add(time.Minute)) {
		t.Errorf("no cluster known: %v", g.EstimatedStart)
	}
}

// A namespace whose waiting work is only of jobs not in the catalog (being
// removed) has no place, and does not stop the others' from being shared.
func TestPlacesSkipsANamespaceOfUnknownJobs(t *testing.T) {
	c := jobs.Config{JobName: "a~x", CPUCount: 1, MemoryMB: 100, ShardingTotalCount: 1, TimeoutSeconds: 60}
	cfg := func(k string) (jobs.Config, bool) { c.JobName = k; return c, namespace.Of(k) == "a" }
	typ := func(string) estimate.Typical { return estimate.Typical{} }
	st := State{
		Ready:   []queue.Ready{{Job: "gone~w", Since: t0}, {Job: "a~w", Since: t0.Add(time.Second)}},
		Cluster: estimate.Res{CPUs: 1, MemMB: 1000},
	}
	p := Places(t0, st, cfg, typ)
	if len(p) != 1 || !p["a~w"].EstimatedStart.Equal(t0) || p["a~w"].Position != 1 {
		t.Fatalf("places %+v, want a~w's alone, at once", p)
	}
}
