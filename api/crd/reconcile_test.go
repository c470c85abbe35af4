package crd

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// countingDefs counts the status reads of each definition (one per reconcile of a
// registered object).
type countingDefs struct {
	*api.Server
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingDefs) StatusOf(ctx context.Context, kind, ns, name string) (api.DefinitionStatus, error) {
	c.mu.Lock()
	c.reads[name]++
	c.mu.Unlock()
	return c.Server.StatusOf(ctx, kind, ns, name)
}

func (c *countingDefs) readsOf(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[name]
}

func cloudJob(name, cron string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "elasticjob.io/v1", "kind": "CloudJob",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name, "generation": int64(1)},
		"spec": map[string]any{"jobExecutionType": "TRANSIENT", "jobType": "HTTP", "cron": cron, "shardingTotalCount": int64(1),
			"cpuCount": 0.1, "memoryMB": int64(32), "props": map[string]any{"http.url": "http://127.0.0.1:1/x"}},
	}}
	return u
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReconcilerRegistersDeregistersAndWritesStatusOnce(t *testing.T) {
	reg, _, srv := newAPI()
	defs := &countingDefs{Server: srv, reads: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A job whose object was deleted while no scheduler led.
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "gone", []byte(`{"jobType":"HTTP","cron":"0/30 * * * * ?","cpuCount":0.1,"memoryMB":32,"props":{"http.url":"http://127.0.0.1:1/x"}}`),
		registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "gone", UID: "uid-gone"}); err != nil {
		t.Fatal(err)
	}
	dyn := fakeDynamic(cloudJob("hello", "0/30 * * * * ?"), cloudJob("bad", "0 0 25 * * ?"))
	r := &Reconciler{Dynamic: dyn, Defs: defs, Registry: reg, Resync: 20 * time.Millisecond, Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	jobs := reg.In("default")
	waitFor(t, "hello registered and gone deregistered", func() bool {
		_, errHello := jobs.Config().Job(ctx, "hello")
		_, errGone := jobs.Config().Job(ctx, "gone")
		return errHello == nil && errGone != nil
	})
	if o, owned, _ := reg.Config().OwnerOf(ctx, api.DefJob, "default", "hello"); !owned || o.UID != "uid-hello" {
		t.Errorf("owner of hello: %+v %v", o, owned)
	}
	gvr := Kinds[1].GVR()
	status := func(name string) Status {
		u, err := dyn.Resource(gvr).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, _, _ := unstructured.NestedMap(u.Object, "status")
		return statusOf(m)
	}
	waitFor(t, "both statuses", func() bool { return len(status("hello").Conditions) == 1 && len(status("bad").Conditions) == 1 })
	if st := status("hello"); st.Conditions[0].Status != metav1.ConditionTrue || st.NextFireTime == nil || !st.NextFireTime.Time.Equal(t0.Add(30*time.Second)) {
		t.Errorf("hello's status %+v", st)
	}
	if c := status("bad").Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalid || !strings.Contains(c.Message, "0 0 25 * * ?") {
		t.Errorf("bad's condition %+v", c)
	}
	// Resyncs that change nothing write nothing.
	n := defs.readsOf("hello")
	waitFor(t, "three more resyncs", func() bool { return defs.readsOf("hello") >= n+3 })
	writes := 0
	for _, a := range dyn.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" && u.GetObject().(*unstructured.Unstructured).GetName() == "hello" {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("hello's status was written %d times, want once", writes)
	}
	// Deleted in Kubernetes: deregistered, its owner record dropped.
	if err := dyn.Resource(gvr).Namespace("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hello deregistered", func() bool { _, err := jobs.Config().Job(ctx, "hello"); return err != nil })
	if _, owned, _ := reg.Config().OwnerOf(ctx, api.DefJob, "default", "hello"); owned {
		t.Error("hello's owner record stayed")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestReconcilerRegistersAgainWhatWasDeletedBehindTheObject(t *testing.T) {
	reg, _, srv := newAPI()
	dyn := fakeDynamic(cloudJob("hello", "0/30 * * * * ?"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &Reconciler{Dynamic: dyn, Defs: srv, Registry: reg, Resync: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	jobs := reg.In("default")
	waitFor(t, "hello registered", func() bool { _, err := jobs.Config().Job(ctx, "hello"); return err == nil })
	if err := jobs.Config().DeleteJob(ctx, "hello"); err != nil { // as deleting its app or namespace does
		t.Fatal(err)
	}
	waitFor(t, "hello registered again", func() bool { _, err := jobs.Config().Job(ctx, "hello"); return err == nil })
	cancel()
	<-done
}

// newAPI is the REST API over an in-memory registry, on a fake clock at t0.
func newAPI() (*registry.Registry, http.Handler, *api.Server) {
	clk := clock.NewFake(t0)
	reg := registry.New(memory.New())
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler)}
	o.Auth = api.NewAuth(api.Credentials{}, clk, reg.Tenancy())
	h, srv := api.NewServer(o)
	return reg, h, srv
}

// fakeDynamic is client-go's fake dynamic client knowing the kinds' lists, holding objs.
func fakeDynamic(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	lists := map[schema.GroupVersionResource]string{}
	for _, k := range Kinds {
		lists[k.GVR()] = k.Name + "List"
	}
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
}
