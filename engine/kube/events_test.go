package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// launchOne prepares one task's pod on n1 (as Accept does) and shows it to the engine as
// Pending; it returns the task id and the pod.
func launchOne(t *testing.T, e *Engine, job, image string) (string, *corev1.Pod) {
	t.Helper()
	offers := offered(e) // made now, or by an earlier step and still outstanding
	if o := e.offers.byNode["n1"]; len(offers) == 0 && o != nil && o.id != "" {
		offers = []engine.Offer{{ID: o.id}}
	}
	if len(offers) == 0 {
		t.Fatal("no offer")
	}
	tid := jobs.NewTaskID(job, 0, jobs.KindReady, "n1").String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: job, TaskID: tid, ShardingTotalCount: 1},
		Job: jobs.Config{JobName: job, JobExecutionType: jobs.Transient, ShardingTotalCount: 1, TimeoutSeconds: 60},
		App: app.Config{AppName: "a", ContainerImage: image}}
	l := engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td,
		Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", "n1"), CPUs: 0.1, MemMB: 32}}
	pods, _, err := e.prepare([]string{offers[0].ID}, []engine.TaskLaunch{l}, -1)
	if err != nil {
		t.Fatal(err)
	}
	p := pods[0]
	p.UID = types.UID("uid-" + p.Name)
	p.Status.Phase = corev1.PodPending
	e.onPod(p)
	return tid, p
}

// updates runs a step and returns the status updates it sends.
func updates(e *Engine) []engine.Status {
	calls, _ := e.step()
	var out []engine.Status
	for _, c := range calls {
		c(context.Background(), statusSink{&out})
	}
	return out
}

type statusSink struct{ out *[]engine.Status }

func (s statusSink) UpdateAsync(_ context.Context, st engine.Status, done func(bool)) {
	*s.out = append(*s.out, st)
	done(true)
}
func (statusSink) Offers(context.Context, []engine.Offer)          {}
func (statusSink) Subscribed(context.Context, string)              {}
func (statusSink) Rescinded(context.Context, string)               {}
func (statusSink) Message(context.Context, string, string, []byte) {}
func (statusSink) Failure(context.Context, string, string, *int32) {}
func (statusSink) Disconnected(context.Context, error)             {}
func (s statusSink) only(t *testing.T, st []engine.Status) engine.Status {
	t.Helper()
	if len(st) != 1 {
		t.Fatalf("%d updates %+v, want one", len(st), st)
	}
	return st[0]
}

func warning(p *corev1.Pod, container, reason, msg string) *corev1.Event {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + "." + reason, Namespace: p.Namespace}, Type: corev1.EventTypeWarning,
		Reason: reason, Message: msg, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
	if container != "" {
		ev.InvolvedObject.FieldPath = "spec.containers{" + container + "}"
	}
	return ev
}

// TestEventsWaitReasons: a Warning event about a pod that waits (FailedMount) is told to the
// scheduler as a TASK_STAGING update with the reason (a status trace), once per new reason,
// and shown on the cluster page; when the task then ends without having run, the reason is
// in its failure cause. Events about others' pods, Normal events and events after the pod
// ran change nothing, nor does a warning the kubelet starts the pod past (MissingClusterDNS).
func TestEventsWaitReasons(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	_, p := launchOne(t, e, "j", "")
	updates(e)
	mount := warning(p, "", "FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`)
	e.onEvent(mount)
	var sink statusSink
	st := sink.only(t, updates(e))
	if st.State != tstate.Staging || !strings.Contains(st.Message, `waiting: its pod waits on node n1: FailedMount: MountVolume.SetUp failed for volume "cfg"`) {
		t.Errorf("wait note %+v", st)
	}
	mount.Count = 2
	e.onEvent(mount) // the kubelet repeats it
	if u := updates(e); len(u) != 0 {
		t.Errorf("the same reason told again: %+v", u)
	}
	if pv := e.Nodes()[0].Pods[0]; !strings.Contains(pv.Waiting, "FailedMount") {
		t.Errorf("cluster page pod %+v: no wait reason", pv)
	} else if pv.CPUs <= 0 || pv.MemMB <= 0 {
		t.Errorf("cluster page pod %+v: not what it requests (what the page shows of another namespace's pod)", pv)
	}
	other := warning(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: "ns"}}, "", "FailedMount", "x")
	normal := warning(p, "", "Pulled", "y")
	normal.Type = corev1.EventTypeNormal
	elsewhere := warning(p, "", "FailedCreatePodSandBox", "z")
	elsewhere.Namespace = "other"
	// the kubelet falls back to the node's DNS and starts the pod: no wait
	dns := warning(p, "", "MissingClusterDNS", `pod: "x". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`)
	for _, ev := range []*corev1.Event{other, normal, elsewhere, dns} {
		e.onEvent(ev)
		if u := updates(e); len(u) != 0 {
			t.Errorf("event %s/%s %s: updates %+v", ev.Namespace, ev.InvolvedObject.Name, ev.Reason, u)
		}
	}
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, "DeadlineExceeded"
	e.onPod(p)
	st = sink.only(t, updates(e))
	if st.State != tstate.Failed || !strings.Contains(st.Message, "timed out") || !strings.Contains(st.Message, "before, its pod waits on node n1: FailedMount") {
		t.Errorf("end of a task whose pod never ran %+v: want the wait reason in the cause", st)
	}

	_, p2 := launchOne(t, e, "k", "")
	updates(e)
	p2.Status.Phase = corev1.PodRunning
	e.onPod(p2)
	updates(e)
	e.onEvent(warning(p2, "", "FailedMount", "late"))
	if u := updates(e); len(u) != 0 || e.Nodes()[0].Pods[1].Waiting != "" {
		t.Errorf("an event after the pod ran: %+v", u)
	}
}

// TestEventsCauses: the events that end a task (its image is not there, the kubelet
// refused the pod) end it with the same state and cause as the pod's status gives for the
// same problem, whichever comes first, and only once.
func TestEventsCauses(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "8", "16Gi", false))
	var sink statusSink

	_, p := launchOne(t, e, "never", "registry.example/app:1")
	updates(e)
	e.onEvent(warning(p, "task", "Failed", "Error: ErrImageNeverPull")) // its message names no image: the pod's spec does
	e.onEvent(warning(p, "task", "ErrImageNeverPull", `Container image "registry.example/app:1" is not present with pull policy of Never`))
	st := sink.only(t, updates(e))
	want := "image registry.example/app:1 is not on node n1 and imagePullPolicy is Never"
	if st.State != tstate.Error || !strings.HasPrefix(st.Message, want) {
		t.Errorf("ErrImageNeverPull event: %+v, want TASK_ERROR %q", st, want)
	}
	byStatus, _ := statusOfPod(pod(corev1.PodPending, "", corev1.ContainerStatus{Name: containerName, Image: "registry.example/app:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}), 64)
	if byStatus.message != st.Message || byStatus.state != st.State {
		t.Errorf("the pod's status says %+v, the event %+v", byStatus, st)
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, Image: "registry.example/app:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}
	e.onPod(p)
	if u := updates(e); len(u) != 0 {
		t.Errorf("told twice: %+v", u)
	}

	_, p = launchOne(t, e, "pull", "")
	updates(e)
	e.onEvent(warning(p, "task", "Failed", `Failed to pull image "img": rpc error: not found`))
	if st := sink.only(t, updates(e)); st.State != tstate.Error || !strings.Contains(st.Message, "image img cannot be pulled onto node n1 (ErrImagePull)") {
		t.Errorf("pull failure: %+v", st)
	}

	_, p = launchOne(t, e, "full", "")
	updates(e)
	e.onEvent(warning(p, "", "OutOfcpu", "Node didn't have enough resource: cpu, requested: 200, used: 7900, capacity: 8000"))
	st = sink.only(t, updates(e))
	byStatus = failedPod(pod(corev1.PodFailed, "OutOfcpu"), 64)
	if st.State != tstate.Dropped || st.Source != tstate.SourceAgent || st.Reason != tstate.ReasonInvalidOffers || !strings.Contains(st.Message, "back to the queue") ||
		byStatus.state != st.State || byStatus.reason != st.Reason {
		t.Errorf("OutOfcpu event %+v; the pod's status says %+v", st, byStatus)
	}
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, "OutOfcpu"
	e.onPod(p)
	if u := updates(e); len(u) != 0 {
		t.Errorf("told twice: %+v", u)
	}
}

// TestEngineFollowsEvents: the running engine's events informer (a fake clientset) brings
// a Warning event about its pod to the scheduler as a wait reason.
func TestEngineFollowsEvents(t *testing.T) {
	cs := fake.NewClientset(node("n1", "2", "4Gi", false), kubeNS("ns"))
	e, err := New(Config{Client: cs, Namespace: "ns", ExecutorImage: "img", SchedulerURLs: []string{"http://s"}, TaskToken: func(string) string { return "t" }})
	if err != nil {
		t.Fatal(err)
	}
	h := newChanHandler()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Run(ctx, h) }()
	offers := h.offers(t)
	tid := jobs.NewTaskID("j", 0, jobs.KindReady, "n1").String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j", TaskID: tid, ShardingTotalCount: 1},
		Job: jobs.Config{JobName: "j", JobExecutionType: jobs.Transient, ShardingTotalCount: 1}, App: app.Config{AppName: "a"}}
	l := engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td, Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", "n1")}}
	if err := e.Accept(ctx, []string{offers[0].ID}, []engine.TaskLaunch{l}, -1); err != nil {
		t.Fatal(err)
	}
	name := podName("j", 0, tid)
	ev := warning(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, "", "FailedCreatePodSandBox", "failed to set up the sandbox's network")
	if _, err := cs.CoreV1().Events("ns").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case st := <-h.updates:
			if st.TaskID == tid && st.State == tstate.Staging && strings.Contains(st.Message, "FailedCreatePodSandBox: failed to set up") {
				return
			}
		case <-time.After(time.Minute):
			t.Fatal("no wait reason from the event within a minute")
		}
	}
}

// chanHandler passes the engine's offers and updates on channels.
type chanHandler struct {
	statusSink
	offersc chan []engine.Offer
	updates chan engine.Status
}

func newChanHandler() *chanHandler {
	return &chanHandler{offersc: make(chan []engine.Offer, 16), updates: make(chan engine.Status, 64)}
}

func (c *chanHandler) Offers(_ context.Context, os []engine.Offer) { c.offersc <- os }
func (c *chanHandler) UpdateAsync(_ context.Context, st engine.Status, done func(bool)) {
	c.updates <- st
	done(true)
}

func (c *chanHandler) offers(t *testing.T) []engine.Offer {
	t.Helper()
	select {
	case os := <-c.offersc:
		return os
	case <-time.After(time.Minute):
		t.Fatal("no offers within a minute")
	}
	return nil
}
