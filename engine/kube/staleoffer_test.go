package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// othersPod is a pod of someone else on node n asking cpu.
func othersPod(name, n, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "elsewhere"}, Spec: corev1.PodSpec{NodeName: n,
		Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
}

// launchesOn are k launches of job j on node n, each asking cpus (its executor nothing).
func launchesOn(n, j string, k int, cpus float64) []engine.TaskLaunch {
	var out []engine.TaskLaunch
	for i := range k {
		tid := jobs.NewTaskID(j, i, jobs.KindReady, "").String()
		td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: j, TaskID: tid, ShardingItem: i, ShardingTotalCount: k},
			Job: jobs.Config{JobName: j, JobExecutionType: jobs.Transient, ShardingTotalCount: k}, App: app.Config{AppName: "a"}}
		out = append(out, engine.TaskLaunch{TaskID: tid, AgentID: n, CPUs: cpus, MemMB: 32, Task: td, Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", n)}})
	}
	return out
}

// stepCalls runs an offer step and returns what it rescinded and offered.
// supersededOffer is an engine whose node n1 (2 CPUs, 4 GiB) had an offer replaced
// as its room grew (another pod on it ended): the replaced offer and the current one.
func supersededOffer() (e *Engine, superseded, current engine.Offer) {
	e = testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	other := othersPod("x", "n1", "1")
	e.onPod(other)
	superseded = offered(e)[0]
	e.onPodDeleted(other)
	return e, superseded, stepCalls(e).offers[0]
}

func stepCalls(e *Engine) *rescinds {
	r := &rescinds{}
	e.mu.Lock()
	calls, _ := e.offers.reoffer(e.clock.Now(), e.nodes, e.nodeNames(), e.frees())
	calls, e.calls = append(e.calls, calls...), nil
	e.mu.Unlock()
	for _, c := range calls {
		c(context.Background(), r)
	}
	return r
}

// createdPods is the names of the pods the engine asked the API server to create.
func createdPods(e *Engine) []string {
	var out []string
	for _, a := range e.cfg.Client.(interface{ Actions() []k8stesting.Action }).Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, c.GetObject().(*corev1.Pod).Name)
		}
	}
	return out
}

// TestAcceptOfAnOfferReplacedAsRoomGrew: a pod ending on a node between the round's view
// and its ACCEPT replaces the node's offer (its free room changed); the ACCEPT of the
// offer the round saw still places its pods (it was refused `unknown offer` and its
// launches waited for the next round), and the node's newer offer, its room now taken, is
// rescinded. The offer used cannot be used again.
func TestAcceptOfAnOfferReplacedAsRoomGrew(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	other := othersPod("x", "n1", "1")
	e.onPod(other)
	seen := offered(e)[0] // the round's view: 1 cpu free
	e.onPodDeleted(other) // a pod ends: 2 free, the offer made again
	r := stepCalls(e)
	if len(r.ids) != 1 || r.ids[0] != seen.ID || len(r.offers) != 1 || r.offers[0].CPUs != 2 {
		t.Fatalf("rescinded %v, offered %+v: want %s replaced by an offer of 2 cpus", r.ids, r.offers, seen.ID)
	}
	newer := r.offers[0]
	if err := e.Accept(context.Background(), []string{seen.ID}, launchesOn("n1", "j", 2, 0.5), -1); err != nil {
		t.Fatalf("accept of the offer the round saw: %v", err)
	}
	if got := createdPods(e); len(got) != 2 {
		t.Fatalf("pods created %v, want 2", got)
	}
	r = stepCalls(e)
	if len(r.ids) != 1 || r.ids[0] != newer.ID || len(r.offers) != 1 || r.offers[0].CPUs != 1 {
		t.Errorf("after the accept: rescinded %v, offered %+v; want %s rescinded and the rest (1 cpu) offered", r.ids, r.offers, newer.ID)
	}
	err := e.Accept(context.Background(), []string{seen.ID}, launchesOn("n1", "k", 1, 0.1), -1)
	if !errors.Is(err, ErrUnknownOffer) {
		t.Errorf("an offer used twice: %v, want ErrUnknownOffer", err)
	}
	// The newer offer, rescinded by that accept, may have been decided on too: it is
	// taken while the node's room holds its launches, and refused once it does not.
	err = e.Accept(context.Background(), []string{newer.ID}, launchesOn("n1", "l", 2, 0.6), -1)
	if !errors.Is(err, ErrStaleOffer) || !strings.Contains(err.Error(), "room shrank") {
		t.Errorf("accept of more than the room left: %v, want ErrStaleOffer (room shrank)", err)
	}
	if err := e.Accept(context.Background(), []string{newer.ID}, launchesOn("n1", "m", 1, 0.5), -1); err != nil {
		t.Errorf("accept of the newer offer within the room left: %v", err)
	}
	if got := createdPods(e); len(got) != 3 {
		t.Errorf("pods created %v, want 3", got)
	}
}

// TestDeclinedSupersededOfferIsNotTaken: a superseded offer declined (the round placed
// nothing on it) cannot be accepted after.
func TestDeclinedSupersededOfferIsNotTaken(t *testing.T) {
	e, seen, _ := supersededOffer()
	if err := e.Decline(context.Background(), []string{seen.ID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := e.Accept(context.Background(), []string{seen.ID}, launchesOn("n1", "j", 1, 0.1), -1); !errors.Is(err, ErrUnknownOffer) {
		t.Errorf("accept of a declined offer: %v, want ErrUnknownOffer", err)
	}
	if len(createdPods(e)) != 0 {
		t.Error("pods created")
	}
}

// TestStaleOfferOfANodeThatCannotTakeTheLaunches: an offer, outstanding or superseded, of
// a node whose room shrank below the launches, that was cordoned, or that the informer
// showed deleted is refused with the cause, and no pod is created; the node is offered
// again (its offer voided) once it can take pods.
func TestStaleOfferOfANodeThatCannotTakeTheLaunches(t *testing.T) {
	t.Run("room shrank", func(t *testing.T) {
		e := testEngine(clock.NewFake(t0))
		e.onNode(node("n1", "2", "4Gi", false))
		seen := offered(e)[0]
		e.onPod(othersPod("x", "n1", "1500m")) // taken by someone else before the step
		err := e.Accept(context.Background(), []string{seen.ID}, launchesOn("n1", "j", 2, 0.5), -1)
		if !errors.Is(err, ErrStaleOffer) || !strings.Contains(err.Error(), "0.5 cpus") || !strings.Contains(err.Error(), "less than the launches' 1 cpus") {
			t.Fatalf("accept: %v, want ErrStaleOffer saying 0.5 cpus free, 1 asked", err)
		}
		if len(createdPods(e)) != 0 {
			t.Fatal("pods created")
		}
		if r := stepCalls(e); len(r.offers) != 1 || r.offers[0].CPUs != 0.5 {
			t.Errorf("offered after the refusal: %+v, want the node's 0.5 cpus again", r.offers)
		}
		// A view superseded as the room shrank is taken for launches within the room left.
		e = testEngine(clock.NewFake(t0))
		e.onNode(node("n1", "2", "4Gi", false))
		seen = offered(e)[0]
		e.onPod(othersPod("x", "n1", "1500m"))
		stepCalls(e)
		if err := e.Accept(context.Background(), []string{seen.ID}, launchesOn("n1", "k", 1, 0.5), -1); err != nil {
			t.Errorf("accept within the room left: %v", err)
		}
	})
	t.Run("cordoned", func(t *testing.T) {
		e, superseded, current := supersededOffer()
		e.onNode(node("n1", "2", "4Gi", true))
		for _, id := range []string{current.ID, superseded.ID} {
			err := e.Accept(context.Background(), []string{id}, launchesOn("n1", "j", 1, 0.1), -1)
			if !errors.Is(err, ErrStaleOffer) || !strings.Contains(err.Error(), "cordoned") {
				t.Errorf("accept of %s on a cordoned node: %v, want ErrStaleOffer (cordoned)", id, err)
			}
		}
		stepCalls(e)
		e.onNode(node("n1", "2", "4Gi", false)) // uncordoned: the offers before are void still
		if err := e.Accept(context.Background(), []string{superseded.ID}, launchesOn("n1", "j", 1, 0.1), -1); !errors.Is(err, ErrUnknownOffer) {
			t.Errorf("accept of an offer from before the cordon: %v, want ErrUnknownOffer", err)
		}
		if len(createdPods(e)) != 0 {
			t.Error("pods created")
		}
	})
	t.Run("deleted", func(t *testing.T) {
		e, superseded, current := supersededOffer()
		// The informer shows the node deleted; no step has rescinded its offer yet.
		e.onNodeDeleted(node("n1", "2", "4Gi", false))
		for _, id := range []string{current.ID, superseded.ID} {
			err := e.Accept(context.Background(), []string{id}, launchesOn("n1", "j", 1, 0.1), -1)
			if !errors.Is(err, ErrStaleOffer) || !strings.Contains(err.Error(), "node n1 left the cluster") {
				t.Errorf("accept of %s on a deleted node: %v, want ErrStaleOffer (left the cluster)", id, err)
			}
		}
		if got := createdPods(e); len(got) != 0 {
			t.Errorf("pods created on a deleted node: %v", got)
		}
		if r := stepCalls(e); len(r.offers) != 0 || e.offers.byNode["n1"] != nil {
			t.Errorf("offered %+v after the node left, its offers kept %v", r.offers, e.offers.byNode["n1"] != nil)
		}
	})
}

// TestNodeDeletedWhileItsPodsAreCreated: a node the informer shows deleted while an
// ACCEPT's creations are in flight (its offer was taken just before) has the pods made
// there treated as any pod of a node that is gone: deleted after the quarantine, their
// tasks LOST (never STAGING for good on a node that no kubelet serves).
func TestNodeDeletedWhileItsPodsAreCreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		e := testEngine(clk)
		cs := e.cfg.Client.(interface {
			PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
		})
		deleted := false
		cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			if !deleted {
				deleted = true
				e.onNodeDeleted(node("n1", "2", "4Gi", false))
			}
			return false, nil, nil
		})
		e.onNode(node("n1", "2", "4Gi", false))
		ls := launchesOn("n1", "j", 1, 0.5)
		if err := e.Accept(context.Background(), []string{offered(e)[0].ID}, ls, -1); err != nil {
			t.Fatal(err)
		}
		id := ls[0].TaskID
		obj, err := e.cfg.Client.CoreV1().Pods("ns").Get(context.Background(), podName("j", 0, id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj.Status.Phase = corev1.PodPending
		e.onPod(obj)
		if s := stateOf(updates(e), id); s == tstate.Lost {
			t.Fatal("lost at the node's deletion")
		}
		clk.Advance(podGCQuarantine)
		updates(e)
		mustDeleted(t, e, obj.Name)
		e.onPodDeleted(obj)
		us := updates(e)
		st, ok := lostOf(us, id)
		if !ok || !strings.Contains(st.Message, "node n1 left the cluster") {
			t.Errorf("after its pod's deletion: %+v, want LOST (node n1 left the cluster)", us)
		}
	})
}

// TestFreeOnIsFrees: an ACCEPT's one-node pass gives each node the room a step's pass does.
func TestFreeOnIsFrees(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	e.onNode(node("n2", "3", "8Gi", false))
	e.onPod(othersPod("x", "n1", "250m"))
	e.onPod(othersPod("y", "n2", "1"))
	if err := e.Accept(context.Background(), []string{offered(e)[0].ID}, launchesOn("n1", "j", 3, 0.3), -1); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	freeOf := e.frees()
	for _, n := range e.nodes {
		if got, want := e.freeOn(n), freeOf(n); got != want {
			t.Errorf("node %s: freeOn %+v, frees %+v", n.name, got, want)
		}
	}
}
