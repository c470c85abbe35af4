package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testEngine is an Engine without a cluster: its informers' handlers are called by hand.
func testEngine(clk clock.Clock) *Engine {
	e := newEngine(Config{Client: fake.NewClientset(), Namespace: "ns", ExecutorImage: "img", SchedulerURLs: []string{"http://s"},
		TaskToken: func(id string) string { return "t-" + id }, Clock: clk, Log: slog.New(slog.DiscardHandler)}, "fw", "p")
	e.h, e.subscribed = recordingHandler{}, true
	return e
}

func node(name string, cpu, mem string, unschedulable bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

type recordingHandler struct{ engine.Handler }

// offered runs a step and returns the offers it made.
func offered(e *Engine) []engine.Offer {
	e.mu.Lock()
	calls, _ := e.offers.reoffer(e.clock.Now(), e.nodes, e.nodeNames(), e.frees())
	e.mu.Unlock()
	var out []engine.Offer
	for _, c := range calls {
		c(context.Background(), offerSink{&out})
	}
	return out
}

type offerSink struct{ out *[]engine.Offer }

func (s offerSink) Offers(_ context.Context, os []engine.Offer)   { *s.out = append(*s.out, os...) }
func (offerSink) Subscribed(context.Context, string)              {}
func (offerSink) Rescinded(context.Context, string)               {}
func (offerSink) Message(context.Context, string, string, []byte) {}
func (offerSink) Failure(context.Context, string, string, *int32) {}
func (offerSink) Disconnected(context.Context, error)             {}
func (offerSink) UpdateAsync(context.Context, engine.Status, func(bool)) {
}

// TestOffers: a node's free resources are its allocatable less every pod bound to it (any
// namespace); a declined node comes back after the refuse time or when its free resources
// change; suppress and revive; a cordoned or tainted node is not offered.
func TestOffers(t *testing.T) {
	clk := clock.NewFake(t0)
	e := testEngine(clk)
	e.onNode(node("n1", "2", "4Gi", false))
	e.onNode(node("n2", "2", "4Gi", true)) // cordoned
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "elsewhere"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	e.onPod(other)
	got := offered(e)
	if len(got) != 1 || got[0].AgentID != "n1" || got[0].CPUs != 1.5 || got[0].MemMB != 3072 {
		t.Fatalf("offers %+v, want n1 with 1.5 CPUs and 3072 MB", got)
	}
	if again := offered(e); len(again) != 0 {
		t.Fatalf("offered again while outstanding: %+v", again)
	}
	if err := e.Decline(context.Background(), []string{got[0].ID}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if o := offered(e); len(o) != 0 {
		t.Fatalf("offered within the refuse time: %+v", o)
	}
	clk.Advance(5 * time.Second)
	o := offered(e)
	if len(o) != 1 {
		t.Fatalf("not offered after the refuse time")
	}
	_ = e.Decline(context.Background(), []string{o[0].ID}, time.Hour)
	e.onPodDeleted(other) // its free resources change: offered at once
	if o := offered(e); len(o) != 1 || o[0].CPUs != 2 {
		t.Fatalf("offers after a pod left %+v", o)
	}
	_ = e.Suppress(context.Background())
	e.mu.Lock()
	for _, off := range e.offers.byNode {
		off.refuse(e.nodes["n1"], time.Hour, e.clock.Now(), e.frees())
	}
	e.mu.Unlock()
	if o := offered(e); len(o) != 0 {
		t.Fatalf("offered while suppressed: %+v", o)
	}
	_ = e.Revive(context.Background())
	if o := offered(e); len(o) != 1 {
		t.Fatalf("not offered after revive")
	}
	tainted := node("n3", "2", "4Gi", false)
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	e.onNode(tainted)
	for _, off := range offered(e) {
		if off.AgentID == "n3" {
			t.Errorf("a node with a taint not tolerated was offered")
		}
	}
	e.cfg.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	e.onNode(tainted)
	if o := offered(e); len(o) != 1 || o[0].AgentID != "n3" {
		t.Errorf("a tolerated taint: offers %+v", o)
	}
}

// TestAcceptSharesTheExecutor: the launches of one app in one Accept split its executor's
// resources; requests equal limits; the node's offer shrinks by what the pods take.
func TestAcceptSharesTheExecutor(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	off := offered(e)[0]
	var launches []engine.TaskLaunch
	for i := range 3 {
		tid := jobs.NewTaskID("j", i, jobs.KindReady, "n1").String()
		td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j", TaskID: tid, ShardingItem: i, ShardingTotalCount: 3},
			Job: jobs.Config{JobName: "j", JobExecutionType: jobs.Transient, ShardingTotalCount: 3, TimeoutSeconds: 60}, App: app.Config{AppName: "a"}}
		launches = append(launches, engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td,
			Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", "n1"), CPUs: 0.3, MemMB: 96}})
	}
	pods, _, err := e.prepare([]string{off.ID}, launches, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if c.Resources.Limits.Cpu().MilliValue() != 200 || c.Resources.Limits.Memory().Value() != 64<<20 ||
			!c.Resources.Requests.Cpu().Equal(*c.Resources.Limits.Cpu()) {
			t.Errorf("pod %s resources %+v: want 0.1+0.3/3 CPUs and 32+96/3 MB, requests = limits", p.Name, c.Resources)
		}
		if p.Spec.NodeName != "n1" || p.Spec.RestartPolicy != corev1.RestartPolicyNever || *p.Spec.ActiveDeadlineSeconds != 60+deadlineMargin {
			t.Errorf("pod %s spec %+v", p.Name, p.Spec)
		}
	}
	if o := offered(e); len(o) != 1 || o[0].CPUs != 1.4 || o[0].MemMB != 4096-192 {
		t.Errorf("the rest of the node: %+v", o)
	}
	if _, _, err := e.prepare([]string{off.ID}, launches, -1); err == nil {
		t.Error("an offer used twice was accepted")
	}
	// Every pod runs an executor of its own: the engine declares it (the scheduler charges
	// the executor again next round) instead of reporting the executor gone.
	if len(e.calls) != 0 || e.Capabilities().ExecutorSharing {
		t.Errorf("%d queued calls, shares executors %v: want none, and per-task executors declared", len(e.calls), e.Capabilities().ExecutorSharing)
	}
}

func TestLabelValueAndPodName(t *testing.T) {
	long := "a-very-long-job-name-that-goes-on-and-on-and-on-beyond-sixty-three-characters"
	for _, s := range []string{"job_1", "Job.With.Dots", long, "x@y"} {
		v := labelValue(s)
		if len(v) > 63 || !validLabel(v) {
			t.Errorf("labelValue(%q) = %q", s, v)
		}
	}
	if n := podName(long, 12, "t"); len(n) > 63 {
		t.Errorf("pod name %q longer than 63", n)
	}
	if podName("Job_X", 0, "a") == podName("Job_X", 0, "b") {
		t.Error("two tasks, one pod name")
	}
}

func validLabel(v string) bool {
	for i, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && i < len(v)-1 && (r == '-' || r == '_' || r == '.'))
		if !ok {
			return false
		}
	}
	return true
}

// TestOffersFollowTheNodes: a node that joins after a round is offered (in name order with
// the others), one that leaves has its offer rescinded and is not offered again; an offer id
// finds its node though node names hold dashes, and a stale or foreign id finds none.
func TestOffersFollowTheNodes(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("node-b-2", "2", "4Gi", false))
	first := offered(e)
	if len(first) != 1 || first[0].AgentID != "node-b-2" {
		t.Fatalf("offers %+v", first)
	}
	e.onNode(node("node-a-1", "2", "4Gi", false))
	e.onNode(node("node-c-3", "2", "4Gi", false))
	got := offered(e)
	if len(got) != 2 || got[0].AgentID != "node-a-1" || got[1].AgentID != "node-c-3" {
		t.Fatalf("offers after two nodes joined %+v, want node-a-1 then node-c-3", got)
	}
	e.mu.Lock()
	name, _, ok := e.offers.lookup(got[1].ID)
	_, _, stale := e.offers.lookup(first[0].ID + "0")
	_, _, foreign := e.offers.lookup("node-a-1-other-O1")
	e.mu.Unlock()
	if !ok || name != "node-c-3" || stale || foreign {
		t.Errorf("offerOf(%s) = %q %v; a stale id found %v, a foreign one %v", got[1].ID, name, ok, stale, foreign)
	}
	e.onNodeDeleted(node("node-c-3", "2", "4Gi", false))
	rescinded := &rescinds{}
	e.mu.Lock()
	calls, _ := e.offers.reoffer(e.clock.Now(), e.nodes, e.nodeNames(), e.frees())
	e.mu.Unlock()
	for _, c := range calls {
		c(context.Background(), rescinded)
	}
	if len(rescinded.ids) != 1 || rescinded.ids[0] != got[1].ID || len(rescinded.offers) != 0 {
		t.Errorf("after node-c-3 left: rescinded %v, offered %+v; want its offer rescinded and nothing offered", rescinded.ids, rescinded.offers)
	}
	if err := e.Decline(context.Background(), []string{got[0].ID, first[0].ID}, -1); err != nil {
		t.Fatal(err)
	}
	again := offered(e)
	if len(again) != 2 || again[0].AgentID != "node-a-1" || again[1].AgentID != "node-b-2" {
		t.Errorf("offers after declining both %+v, want node-a-1 and node-b-2 again", again)
	}
}

type rescinds struct {
	offerSink
	ids    []string
	offers []engine.Offer
}

func (r *rescinds) Rescinded(_ context.Context, id string)      { r.ids = append(r.ids, id) }
func (r *rescinds) Offers(_ context.Context, os []engine.Offer) { r.offers = append(r.offers, os...) }

// TestAcceptsInFlightTogether: the engine declares several Accepts in flight, so Accepts of
// different nodes run at once (under -race: their state is the engine's lock's), each
// creating its own pods; a second Accept of an offer already taken fails, whichever wins.
func TestAcceptsInFlightTogether(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	const nodes = acceptsInFlight
	for i := range nodes {
		e.onNode(node(fmt.Sprintf("n%d", i), "2", "4Gi", false))
	}
	offs := offered(e)
	if len(offs) != nodes {
		t.Fatalf("offers %+v, want one per node", offs)
	}
	launch := func(n string, i int) engine.TaskLaunch {
		tid := jobs.NewTaskID("j"+n, i, jobs.KindReady, n).String()
		td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j" + n, TaskID: tid, ShardingItem: i, ShardingTotalCount: 2},
			Job: jobs.Config{JobName: "j" + n, JobExecutionType: jobs.Transient, ShardingTotalCount: 2, TimeoutSeconds: 60}, App: app.Config{AppName: "a"}}
		return engine.TaskLaunch{TaskID: tid, AgentID: n, CPUs: 0.1, MemMB: 32, Task: td, Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", n), CPUs: 0.1, MemMB: 32}}
	}
	errs := make([]error, nodes+1)
	var wg sync.WaitGroup
	for i, o := range offs {
		wg.Go(func() {
			errs[i] = e.Accept(context.Background(), []string{o.ID}, []engine.TaskLaunch{launch(o.AgentID, 0), launch(o.AgentID, 1)}, -1)
		})
	}
	wg.Go(func() { // offs[0] again, other tasks
		errs[nodes] = e.Accept(context.Background(), []string{offs[0].ID}, []engine.TaskLaunch{launch(offs[0].AgentID+"x", 0)}, -1)
	})
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			if !errors.Is(err, ErrUnknownOffer) {
				t.Fatalf("Accept: %v", err)
			}
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("Accepts failed: %d (%v), want the second of offer %s alone", failed, errs, offs[0].ID)
	}
	pods, err := e.cfg.Client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * nodes
	if errs[nodes] == nil {
		want = 2*(nodes-1) + 1
	}
	if len(pods.Items) != want {
		t.Fatalf("%d pods created, want %d", len(pods.Items), want)
	}
}
