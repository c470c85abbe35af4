package registry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

func TestPhysicalAndLogicalAreInverse(t *testing.T) {
	for _, c := range []struct{ view, store string }{
		{"/config/job/nightly", "/config/job/nightly"},
		{"/config/job/pay~nightly", "/namespaces/pay/config/job/nightly"},
		{"/state/running/pay~nightly/pay~nightly@-@3", "/namespaces/pay/state/running/nightly/nightly@-@3"},
		{"/state/waiting/failover/pay~j/pay~j@-@0", "/namespaces/pay/state/waiting/failover/j/j@-@0"},
		{"/state/workflow/pay~wf/20260101-x", "/namespaces/pay/state/workflow/wf/20260101-x"},
		{"/state/workflow_keys/pay~wf/k1", "/namespaces/pay/state/workflow_keys/wf/k1"},
		{"/state/trigger_keys/pay~wf-abc", "/namespaces/pay/state/trigger_keys/wf-abc"},
		{"/kube/logs/pay~j/pay~j@-@0@-@READY@-@a@-@u", "/namespaces/pay/kube/logs/j/j@-@0@-@READY@-@a@-@u"},
		{"/state/registered/pay~nightly", "/namespaces/pay/state/registered/nightly"},
		{"/state/leader_term", "/state/leader_term"},
		{"/ha/framework_id", "/ha/framework_id"},
	} {
		got, err := physical(c.view)
		if err != nil || got != c.store {
			t.Errorf("physical(%q) = %q, %v; want %q", c.view, got, err, c.store)
		}
		back, ok := logical(c.store)
		if !ok || back != c.view {
			t.Errorf("logical(%q) = %q, %v; want %q", c.store, back, ok, c.view)
		}
	}
	for _, bad := range []string{"/state/running/pay~j/search~j@-@0", "/state/running/pay~j/j@-@0", "/config/job/default~j", "/config/job/Bad~j"} {
		if p, err := physical(bad); !errors.Is(err, store.ErrBadPath) {
			t.Errorf("physical(%q) = %q, %v; want a bad path", bad, p, err)
		}
	}
	for _, hidden := range []string{"/namespaces/pay", "/namespaces/pay/config", "/namespaces/pay/config/job", "/namespaces"} {
		if p, ok := logical(hidden); ok {
			t.Errorf("logical(%q) = %q: shown", hidden, p)
		}
	}
}

// twoTeams registers the same app and job names in default, pay and
// search.
func twoTeams(t *testing.T, kv store.KV) (*Registry, store.KV, context.Context) {
	t.Helper()
	r, ctx := New(kv), context.Background()
	for _, ns := range []string{"pay", "search"} {
		if _, err := r.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"default", "pay", "search"} {
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/"+ns+".tgz", "bin/start.sh"
		if err := r.In(ns).Config().AddApp(ctx, a); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.AppName, j.Description = "nightly", "etl", "of "+ns
		if err := r.In(ns).Config().AddJob(ctx, j); err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
	}
	return r, kv, ctx
}

func TestSameNamesInTwoNamespacesNeverMeet(t *testing.T) {
	eachStore(t, func(t *testing.T, kv store.KV) {
		r, kv, ctx := twoTeams(t, kv)
		all, err := r.Config().Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, j := range all {
			keys = append(keys, j.JobName+"/"+j.AppName+"/"+j.Description)
		}
		want := []string{"nightly/etl/of default", "pay~nightly/pay~etl/of pay", "search~nightly/search~etl/of search"}
		if !slices.Equal(keys, want) {
			t.Fatalf("the scheduler's view: %v; want %v", keys, want)
		}
		for _, ns := range []string{"default", "pay", "search"} {
			js, err := r.In(ns).Config().Jobs(ctx)
			if err != nil || len(js) != 1 || js[0].JobName != "nightly" || js[0].AppName != "etl" || js[0].Description != "of "+ns {
				t.Fatalf("%s's view: %+v, %v", ns, js, err)
			}
		}
		// Stored as the namespace knows its names, where the namespace's tree is.
		n, err := kv.Get(ctx, "/namespaces/pay/config/job/nightly")
		if err != nil {
			t.Fatal(err)
		}
		var stored jobs.Config
		if err := jsonUnmarshal(n.Value, &stored); err != nil || stored.JobName != "nightly" || stored.AppName != "etl" {
			t.Fatalf("stored %s", n.Value)
		}
		// The default namespace keeps the original's layout.
		if _, err := kv.Get(ctx, "/config/job/nightly"); err != nil {
			t.Fatal(err)
		}
		// Deleting pay's app deletes pay's job only.
		if _, err := r.In("pay").Config().DeleteApp(ctx, "etl"); err != nil {
			t.Fatal(err)
		}
		if all, _ := r.Config().Jobs(ctx); len(all) != 2 {
			t.Fatalf("after pay deleted its app: %+v", all)
		}
	})
}

func TestTheSchedulersWritesLandInTheNamespace(t *testing.T) {
	eachStore(t, func(t *testing.T, kv store.KV) {
		r, _, ctx := twoTeams(t, kv)
		if _, err := r.Work().Trigger(ctx, "pay~nightly", false, t0); err != nil {
			t.Fatal(err)
		}
		if q, _ := r.In("pay").Work().ReadyQueue(ctx); len(q) != 1 || q[0].Job != "nightly" {
			t.Fatalf("pay's ready queue: %+v", q)
		}
		if q, _ := r.In("default").Work().ReadyQueue(ctx); len(q) != 0 {
			t.Fatalf("default's ready queue: %+v", q)
		}
		// A keyed trigger in pay: the scheduler sees the key qualified, and its
		// record where pay's API reads it.
		if _, err := r.In("pay").Work().TriggerRun(ctx, "nightly", queue.PendingRun{IdempotencyKey: "k1"}, t0); err != nil {
			t.Fatal(err)
		}
		q, err := r.Work().ReadyQueue(ctx)
		if err != nil || len(q) != 1 || q[0].Job != "pay~nightly" || len(q[0].Runs) != 1 || q[0].Runs[0].IdempotencyKey != "pay~k1" {
			t.Fatalf("the scheduler's ready queue: %+v, %v", q, err)
		}
		id := jobs.NewTaskID("pay~nightly", 0, jobs.KindReady, "agent").String()
		e := task.Entry{TaskID: id, RunKey: "pay~k1", State: task.Running}
		if err := r.Change().Launch("pay~nightly", 0, e).Dequeue(q[0], t0).RecordRun("pay~k1", task.RunRecord{JobName: "pay~nightly", At: t0}).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		run, err := r.In("pay").Work().RunningOf(ctx, "nightly")
		if err != nil || run[0].TaskID != id || run[0].RunKey != "k1" {
			t.Fatalf("pay's running tasks: %+v, %v", run, err)
		}
		if rec, err := r.In("pay").Work().RunRecordOf(ctx, "k1"); err != nil || rec.JobName != "nightly" {
			t.Fatalf("pay's record of k1: %+v, %v", rec, err)
		}
		if all, _ := r.Work().RunningTasks(ctx); len(all) != 1 || all["pay~nightly"][0].RunKey != "pay~k1" {
			t.Fatalf("the scheduler's running tasks: %+v", all)
		}
		if def, _ := r.In("default").Work().RunningTasks(ctx); len(def) != 0 {
			t.Fatalf("default's running tasks: %+v", def)
		}
	})
}

func TestWorkflowsNamesAreQualifiedForTheScheduler(t *testing.T) {
	eachStore(t, func(t *testing.T, kv store.KV) {
		r, _, ctx := twoTeams(t, kv)
		wf := workflow.Config{Name: "flow", MaxConcurrentRuns: 1, Nodes: []workflow.Node{{ID: "a", Job: "nightly"}}}
		if err := r.In("pay").Flows().AddWorkflow(ctx, wf); err != nil {
			t.Fatal(err)
		}
		got, err := r.Flows().Workflow(ctx, "pay~flow")
		if err != nil || got.Name != "pay~flow" || got.Nodes[0].Job != "pay~nightly" {
			t.Fatalf("the scheduler's workflow: %+v, %v", got, err)
		}
		if mine, _ := r.In("pay").Flows().Workflow(ctx, "flow"); mine.Nodes[0].Job != "nightly" {
			t.Fatalf("pay's workflow: %+v", mine)
		}
		if wf.Nodes[0].Job != "nightly" {
			t.Fatal("the caller's value was changed")
		}
	})
}

func TestWatchesFollowEveryNamespace(t *testing.T) {
	eachStore(t, watchesFollowEveryNamespace)
}

func watchesFollowEveryNamespace(t *testing.T, kv store.KV) {
	r, ctx := New(kv), t.Context()
	if _, err := r.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := r.WatchConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready, err := r.WatchReady(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/a.tgz", "bin/start.sh"
	if err := r.In("pay").Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := r.In("pay").Work().Trigger(ctx, "x", false, t0); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case c := <-cfg:
			got = c.Kind == ConfigApp && c.Name == "pay~etl"
			if c.Kind == ConfigApp && !got {
				t.Fatalf("config change %+v", c)
			}
		case <-deadline:
			t.Fatal("no config change for pay's app")
		}
	}
	select {
	case c := <-ready:
		if c.Job != "pay~x" || !c.Present {
			t.Fatalf("ready change %+v", c)
		}
	case <-deadline:
		t.Fatal("no ready change for pay's job")
	}
}

func TestNamespacesAndWhatTheyHold(t *testing.T) {
	eachStore(t, func(t *testing.T, kv store.KV) {
		r, _, ctx := twoTeams(t, kv)
		recs, err := r.Tenancy().Namespaces(ctx)
		if err != nil || len(recs) != 3 || recs[0].Name != "default" || recs[1].Name != "pay" || recs[2].Name != "search" {
			t.Fatalf("namespaces: %+v, %v", recs, err)
		}
		err = r.Tenancy().DeleteNamespace(ctx, "pay")
		if !errors.Is(err, ErrNamespaceNotEmpty) || err.Error() != "namespace not empty: namespace 'pay' holds 1 app (etl), 1 job (nightly): delete them first" {
			t.Fatalf("delete a namespace with an app: %v", err)
		}
		if _, err := r.In("pay").Config().DeleteApp(ctx, "etl"); err != nil {
			t.Fatal(err)
		}
		if err := r.Tenancy().DeleteNamespace(ctx, "pay"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := r.Tenancy().NamespaceExists(ctx, "pay"); ok {
			t.Fatal("pay still exists")
		}
		// A write into the deleted namespace fails instead of bringing it back.
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/a.tgz", "bin/start.sh"
		if err := r.In("pay").Config().AddApp(ctx, a); !errors.Is(err, ErrNamespaceNotFound) {
			t.Fatalf("a write into a deleted namespace: %v", err)
		}
		if ok, _ := r.Tenancy().NamespaceExists(ctx, "pay"); ok {
			t.Fatal("the write brought pay back")
		}
		if err := r.Tenancy().DeleteNamespace(ctx, "default"); !errors.Is(err, ErrNamespaceNotEmpty) {
			t.Fatalf("delete default: %v", err)
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return decodeAt("/", b, v) }

// chainKV is a store that records the chains it is asked to commit.
type chainKV struct {
	store.KV
	chains [][][]store.Op
}

func (c *chainKV) CommitChain(ctx context.Context, hint store.Hint, chain string, batches [][]store.Op) (int, [][]store.Event, error) {
	c.chains = append(c.chains, batches)
	return store.CommitChain(ctx, c.KV, hint, chain, batches)
}

// The scheduler's view hands a chain to the store's own CommitChain (a
// pipelined chain of multis on ZooKeeper), its paths in the store's
// layout, instead of hiding it behind one plain commit.
func TestAChainThroughTheViewIsTheStoresChain(t *testing.T) {
	ctx := context.Background()
	kv := &chainKV{KV: memory.New()}
	v := allView{kv}
	applied, _, err := v.CommitChain(ctx, nil, chainPath, [][]store.Op{
		{store.Put("/config/job/pay~a", []byte("1"))},
		{store.Put("/config/job/b", []byte("2"))},
	})
	if err != nil || applied != 2 {
		t.Fatalf("CommitChain = %d, %v", applied, err)
	}
	if len(kv.chains) != 1 || kv.chains[0][0][0].Path != "/namespaces/pay/config/job/a" || kv.chains[0][1][0].Path != "/config/job/b" {
		t.Fatalf("the store's chains: %+v", kv.chains)
	}
	if n, err := kv.Get(ctx, "/namespaces/pay/config/job/a"); err != nil || string(n.Value) != "1" {
		t.Fatalf("pay's a: %+v, %v", n, err)
	}
}
