package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/task"
)

type usageAnswer struct {
	Namespace    string
	Guarantee    *namespace.Resources
	Limit        *namespace.Resources
	Weight       float64
	InUse        namespace.Resources
	EverySeconds int
	Since        *time.Time
	Samples      []nsusage.Sample
	OnTime       struct {
		BoundSeconds float64
		Fires        int
		OnTime       int
		Rate         *float64
	}
}

// TestNamespaceUsage: a viewer of pay reads pay's usage now (its running
// shard and executor), its guarantee and limit, the leader's samples and
// the share of its fires on time; search's usage series holds nothing of
// pay's; a user without a role in pay is refused (403) and an unknown
// namespace is 404 for the admin.
func TestNamespaceUsage(t *testing.T) {
	series := nsusage.New()
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Tenancy.NamespaceSeries = series })
	ctx := context.Background()
	g, l := namespace.Resources{CPUCount: 2, MemoryMB: 1024}, namespace.Resources{CPUCount: 4, MemoryMB: 4096}
	if _, err := tn.reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay", Guarantee: &g, Limit: &l, Weight: 2}); err != nil {
		t.Fatal(err)
	}
	want := nightlyTask(t, tn)

	// Before the leader samples: the usage now, no series.
	got := readUsage(t, tn, "pay", "carol", "pw3")
	if got.InUse != want || got.Since != nil || len(got.Samples) != 0 || got.OnTime.Rate != nil {
		t.Fatalf("before sampling: %+v; want in use %+v and no series", got, want)
	}

	clk := clock.NewFake(t0)
	s := nsusage.Sampler{Registry: tn.reg, Series: series, Clock: clk, Log: slog.New(slog.DiscardHandler)}
	series.Reset(t0)
	series.Fired("pay", 200*time.Millisecond)
	series.Fired("pay", 3*time.Second)
	if err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(nsusage.Every)
	series.Fired("pay", 0)
	series.Fired("search", 5*time.Second)
	if err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	got = readUsage(t, tn, "pay", "carol", "pw3")
	if got.Namespace != "pay" || *got.Guarantee != g || *got.Limit != l || got.Weight != 2 || got.EverySeconds != 10 {
		t.Errorf("pay's capacity: %+v", got)
	}
	if got.Since == nil || !got.Since.Equal(t0) || len(got.Samples) != 2 || got.Samples[1].CPUCount != want.CPUCount ||
		got.Samples[1].MemoryMB != want.MemoryMB || !got.Samples[1].At.Equal(t0.Add(nsusage.Every)) {
		t.Errorf("pay's series: %+v", got.Samples)
	}
	if got.OnTime.Fires != 3 || got.OnTime.OnTime != 2 || got.OnTime.Rate == nil || *got.OnTime.Rate != 2.0/3 || got.OnTime.BoundSeconds != 1 {
		t.Errorf("pay's on-time: %+v", got.OnTime)
	}
	other := readUsage(t, tn, "search", "bob", "hunter2")
	if other.InUse != (namespace.Resources{}) || other.Guarantee != nil || other.OnTime.Fires != 1 || other.OnTime.OnTime != 0 ||
		len(other.Samples) != 2 || other.Samples[1].CPUCount != 0 {
		t.Errorf("search's usage: %+v", other)
	}

	if w := tn.call("GET", "/api/namespaces/pay/usage", "", "bob", "hunter2"); w.Code != http.StatusForbidden {
		t.Errorf("bob reads pay's usage: %d %s; want 403", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/namespaces/pay/usage", "", "", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous reads pay's usage: %d %s; want 401", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/namespaces/nosuch/usage", "", "root", "s3cret"); w.Code != http.StatusNotFound {
		t.Errorf("the admin reads an unknown namespace's usage: %d %s; want 404", w.Code, w.Body)
	}
}

// TestNamespaceUsageCountsRetiringTasks: while a DAEMON shard moves with an overlap, its
// old (retiring) task holds its resources beside its replacement's: the namespace's usage
// counts both tasks and both executors, as the launch round does against its limit, and
// its listing counts both running tasks.
func TestNamespaceUsageCountsRetiringTasks(t *testing.T) {
	tn := twoTeamsAPI(t)
	ctx := context.Background()
	running, err := tn.reg.Work().RunningOf(ctx, "pay~nightly")
	if err != nil || len(running) != 1 {
		t.Fatalf("pay~nightly runs %+v (%v)", running, err)
	}
	ch := tn.reg.Change()
	if err := ch.Retire(ctx, "pay~nightly", 0, running[0], t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	one := nightlyTask(t, tn)
	if got := readUsage(t, tn, "pay", "carol", "pw3"); got.InUse != one {
		t.Fatalf("in use with the retiring task alone: %+v, want %+v", got.InUse, one)
	}
	repl := task.Entry{TaskID: jobs.NewTaskID("pay~nightly", 0, jobs.KindReady, "k8s:agent-2").String(), AgentID: "k8s:agent-2",
		ExecutorID: "pay~etl@-@k8s:agent-2", State: task.Staging, LaunchedAt: t0}
	if err := tn.reg.Change().Launch("pay~nightly", 0, repl).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readUsage(t, tn, "pay", "carol", "pw3"); got.InUse != one.Add(one) {
		t.Fatalf("in use during the overlap: %+v, want both tasks and executors %+v", got.InUse, one.Add(one))
	}
	w := tn.call("GET", "/api/namespaces/pay", "", "carol", "pw3")
	var v struct{ Usage struct{ RunningTasks int } }
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != http.StatusOK || v.Usage.RunningTasks != 2 {
		t.Fatalf("GET /api/namespaces/pay: %d %s; want 2 running tasks", w.Code, w.Body)
	}
}

// nightlyTask is what one task of pay's nightly job holds: the job's resources and its
// executor's (the app etl's).
func nightlyTask(t *testing.T, tn *tenancy) namespace.Resources {
	t.Helper()
	ctx := context.Background()
	j, err := tn.reg.In("pay").Config().Job(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	a, err := tn.reg.In("pay").Config().App(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	return namespace.Resources{CPUCount: j.CPUCount + a.CPUCount, MemoryMB: j.MemoryMB + a.MemoryMB}
}

func readUsage(t *testing.T, tn *tenancy, ns, user, pass string) usageAnswer {
	t.Helper()
	w := tn.call("GET", "/api/namespaces/"+ns+"/usage", "", user, pass)
	if w.Code != http.StatusOK {
		t.Fatalf("%s reads %s's usage: %d %s", user, ns, w.Code, w.Body)
	}
	var u usageAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStandbyForwardsUsage: the usage series is the leader's (in
// memory), so a standby forwards the read and answers the leader's
// samples, not its own empty series.
func TestStandbyForwardsUsage(t *testing.T) {
	series := nsusage.New()
	series.Reset(t0)
	series.Record(t0, map[string]namespace.Resources{"pay": {CPUCount: 1.5, MemoryMB: 64}})
	p := newPair(t, api.Credentials{}, func(o *api.Options) { o.Tenancy.NamespaceSeries = series })
	p.leader.must(http.StatusCreated, http.MethodPut, "/api/namespaces/pay", "")
	before := p.served.Load()
	r := p.standby.request(http.MethodGet, "/api/namespaces/pay/usage", "")
	if r.Code != http.StatusOK || p.served.Load() != before+1 {
		t.Fatalf("standby's usage read: %d %s (leader served %d more)", r.Code, r.Body, p.served.Load()-before)
	}
	var u usageAnswer
	if err := json.Unmarshal(r.Body, &u); err != nil {
		t.Fatal(err)
	}
	if len(u.Samples) != 1 || u.Samples[0].CPUCount != 1.5 || u.Since == nil {
		t.Errorf("standby answered %+v; want the leader's sample", u)
	}
}

// TestNamespaceUsageIdleExecutors: the leader's idle executors of a
// namespace (up between tasks, charged to it) are listed in its usage and
// added to what it holds, on the usage route and on GET
// /api/namespaces/{name}; where the instance does not know them (ok
// false: a standby) neither shows any.
func TestNamespaceUsageIdleExecutors(t *testing.T) {
	leads := true
	idle := map[string][]api.IdleExecutor{"search": {{App: "idx", AgentID: "a1", CPUCount: 0.05, MemoryMB: 64}}}
	tn := twoTeamsAPI(t, func(o *api.Options) {
		o.Tenancy.IdleExecutors = func(_ context.Context, ns string) ([]api.IdleExecutor, bool) { return idle[ns], leads }
	})
	ctx := context.Background()
	if _, err := tn.reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "search"}); err != nil {
		t.Fatal(err)
	}
	var u struct {
		InUse         namespace.Resources
		IdleExecutors []api.IdleExecutor
	}
	read := func(path string) {
		t.Helper()
		w := tn.call("GET", path, "", "bob", "hunter2")
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		var body struct {
			InUse         namespace.Resources
			IdleExecutors []api.IdleExecutor
			Usage         *struct {
				InUse         namespace.Resources
				IdleExecutors []api.IdleExecutor
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		u.InUse, u.IdleExecutors = body.InUse, body.IdleExecutors
		if body.Usage != nil {
			u.InUse, u.IdleExecutors = body.Usage.InUse, body.Usage.IdleExecutors
		}
	}
	for _, path := range []string{"/api/namespaces/search/usage", "/api/namespaces/search"} {
		leads = true
		read(path)
		if u.InUse != (namespace.Resources{CPUCount: 0.05, MemoryMB: 64}) || len(u.IdleExecutors) != 1 || u.IdleExecutors[0] != idle["search"][0] {
			t.Errorf("GET %s on the leader: in use %+v, idle %+v; want search's idle executor", path, u.InUse, u.IdleExecutors)
		}
		leads = false
		read(path)
		if u.InUse != (namespace.Resources{}) || len(u.IdleExecutors) != 0 {
			t.Errorf("GET %s where the executors are not known: in use %+v, idle %+v; want none", path, u.InUse, u.IdleExecutors)
		}
	}
}
