package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// testCluster is a Cluster on a fake API with namespace "team" mapped to Kubernetes
// namespace "k-team" and namespace "bad" to none.
func testCluster(t *testing.T, objs ...runtime.Object) (*Cluster, *memTails) {
	t.Helper()
	tails := &memTails{}
	cs := fake.NewClientset(objs...)
	c, err := NewCluster(Config{Client: cs, Namespace: "jobs", ExecutorImage: "img", SchedulerURLs: []string{"http://s"},
		TaskToken: func(id string) string { return "t-" + id },
		NamespaceOf: func(ns string) (string, error) {
			if ns == "bad" {
				return "", errors.New("namespace bad has no Kubernetes namespace")
			}
			return "k-" + ns, nil
		}}, tails, func(context.Context) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	return c, tails
}

func taskPod(kns, app, taskID, node string) *corev1.Pod {
	tid, _ := jobs.ParseTaskID(taskID)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: podName(tid.JobName, tid.Item, taskID),
		Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelApp: labelValue(app)},
		Annotations: map[string]string{AnnotationApp: app, AnnotationTask: taskID, AnnotationExec: jobs.ExecutorID(app, node)}},
		Spec: corev1.PodSpec{NodeName: node}}
}

func TestClusterDeclaresItsCapabilities(t *testing.T) {
	c, _ := testCluster(t)
	want := engine.Capabilities{Checkpointing: true, Logs: true, Sandboxes: true, ClusterView: true, Capacity: true, Accepts: 12}
	if got := c.Capabilities(); got != want {
		t.Fatalf("%+v, want %+v (no executor sharing: a pod per task)", got, want)
	}
	if got := (&Engine{}).Capabilities(); got != want { // one value per engine: the term's Driver too
		t.Fatalf("the term's engine declares %+v, want %+v", got, want)
	}
	// Beside other clusters a round places at most the client's requests per second here.
	if n := (&Engine{cfg: Config{APIQPS: 50}}).Capabilities().RoundTasks; n != 50 {
		t.Fatalf("RoundTasks = %d at kube_api_qps 50, want 50", n)
	}
}

// A running task's log is its pod's (the fake API serves "fake logs"); once the pod is
// gone, the tail kept; with neither, ErrNotFound; a task id that is not one, ErrInvalid.
func TestClusterTaskLogFromThePodThenTheKeptTail(t *testing.T) {
	live := jobs.NewTaskID("team~j", 0, jobs.KindReady, "n1").String()
	done := jobs.NewTaskID("j", 1, jobs.KindReady, "n1").String()
	c, tails := testCluster(t, taskPod("k-team", "team~a", live, "n1"))
	if err := (&Tails{Store: tails}).Put(t.Context(), done, Tail{Stdout: "out of a finished task\n", Stderr: "err\n"}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.TaskLog(t.Context(), live, "stdout", -4, 4)
	if err != nil || ch != (engine.LogChunk{Offset: 5, Size: 9, Data: "logs"}) {
		t.Fatalf("live log (in the team's Kubernetes namespace): %+v, %v", ch, err)
	}
	if ch, err = c.TaskLog(t.Context(), done, "stdout", 0, 3); err != nil || ch != (engine.LogChunk{Offset: 0, Size: 23, Data: "out"}) {
		t.Fatalf("kept tail: %+v, %v", ch, err)
	}
	if ch, err = c.TaskLog(t.Context(), done, "stderr", 0, -1); err != nil || ch.Data != "err\n" {
		t.Fatalf("kept stderr: %+v, %v", ch, err)
	}
	gone := jobs.NewTaskID("j", 2, jobs.KindReady, "n1").String()
	if _, err := c.TaskLog(t.Context(), gone, "stdout", 0, 10); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("no pod, no tail: %v, want ErrNotFound", err)
	}
	if _, err := c.TaskLog(t.Context(), "nope", "stdout", 0, 10); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("bad task id: %v, want ErrInvalid", err)
	}
}

// A pod that has ended or is being deleted serves the tail kept when it finished: the
// kubelet may have removed its container already (pods/log then answers with its own error
// text). An ended pod whose tail is not kept yet still serves its container's log.
func TestClusterTaskLogOfAnEndedPodIsItsKeptTail(t *testing.T) {
	succeeded := jobs.NewTaskID("team~j", 0, jobs.KindReady, "n1").String()
	deleting := jobs.NewTaskID("team~j", 1, jobs.KindReady, "n1").String()
	noTail := jobs.NewTaskID("team~j", 2, jobs.KindReady, "n1").String()
	p0, p1, p2 := taskPod("k-team", "team~a", succeeded, "n1"), taskPod("k-team", "team~a", deleting, "n1"), taskPod("k-team", "team~a", noTail, "n1")
	p0.Status.Phase, p2.Status.Phase = corev1.PodSucceeded, corev1.PodFailed
	now := metav1.Now()
	p1.DeletionTimestamp, p1.Finalizers = &now, []string{"test"}
	c, tails := testCluster(t, p0, p1, p2)
	for _, id := range []string{succeeded, deleting} {
		if err := (&Tails{Store: tails}).Put(t.Context(), id, Tail{Stdout: "kept " + id[len(id)-4:], Stderr: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{succeeded, deleting} {
		ch, err := c.TaskLog(t.Context(), id, "stdout", 0, -1)
		if err != nil || ch.Data != "kept "+id[len(id)-4:] {
			t.Fatalf("%s: %+v, %v; want its kept tail", id, ch, err)
		}
		if ch, err = c.TaskLog(t.Context(), id, "stderr", 0, -1); err != nil || ch.Data != "e" {
			t.Fatalf("%s stderr: %+v, %v; want the kept one", id, ch, err)
		}
	}
	if ch, err := c.TaskLog(t.Context(), noTail, "stdout", 0, -1); err != nil || ch.Data != "fake logs" {
		t.Fatalf("ended, no tail yet: %+v, %v; want the container's log", ch, err)
	}
}

func TestClusterSandboxesAreTheAppsPods(t *testing.T) {
	t1 := jobs.NewTaskID("team~j", 0, jobs.KindReady, "n1").String()
	t2 := jobs.NewTaskID("team~j", 1, jobs.KindReady, "n2").String()
	other := jobs.NewTaskID("team~k", 0, jobs.KindReady, "n1").String()
	c, _ := testCluster(t, taskPod("k-team", "team~a", t1, "n1"), taskPod("k-team", "team~a", t2, "n2"), taskPod("k-team", "team~b", other, "n1"))
	boxes, err := c.Sandboxes(t.Context(), "team~a")
	if err != nil || len(boxes) != 2 {
		t.Fatalf("sandboxes %+v, %v", boxes, err)
	}
	for _, b := range boxes {
		if b.ExecutorID != jobs.ExecutorID("team~a", b.AgentID) || b.Hostname != b.AgentID || b.Path[:len("pod k-team/")] != "pod k-team/" {
			t.Fatalf("sandbox %+v", b)
		}
	}
	if boxes, err := c.Sandboxes(t.Context(), "team~none"); err != nil || boxes == nil || len(boxes) != 0 {
		t.Fatalf("an app without pods: %+v, %v (want an empty list)", boxes, err)
	}
	if _, err := c.Sandboxes(t.Context(), "bad~a"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a namespace without a Kubernetes namespace: %v", err)
	}
}

// On an instance not leading, the nodes are read from the API: the cluster view lists them
// all, the inventory the usable ones; executors' reports are refused for a retry.
func TestClusterOnAStandbyReadsTheNodesFromTheAPI(t *testing.T) {
	c, _ := testCluster(t, node("n1", "4", "8Gi", false), node("n2", "2", "4Gi", true))
	v := c.ClusterView(t.Context())
	info, _ := v.Detail.(ClusterInfo)
	if v.Name != "kubernetes" || info.Namespace != "jobs" || info.Error != "" || len(info.Nodes) != 2 ||
		!info.Nodes[0].Usable || info.Nodes[1].Usable || fmt.Sprint(v.Agents) != "[]" {
		t.Fatalf("view %+v", v)
	}
	ags, err := c.Agents(t.Context())
	if err != nil || len(ags) != 1 || ags[0] != (engine.Agent{ID: "n1", Hostname: "n1", CPUs: 4, MemMB: 8192}) {
		t.Fatalf("inventory %+v, %v", ags, err)
	}
	if err := c.Report(t.Context(), engine.ExecutorReport{TaskID: "x"}); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("report on a standby: %v, want ErrUnavailable", err)
	}
}

func TestClusterNamespaceCap(t *testing.T) {
	c, _ := testCluster(t)
	if kns, cp, ok := c.NamespaceCap("bad"); kns != "" || !ok || cp.Closed == "" {
		t.Fatalf("unmapped: %q %+v %v", kns, cp, ok)
	}
	if kns, _, ok := c.NamespaceCap("team"); kns != "k-team" || ok {
		t.Fatalf("team on a standby: %q %v (its namespace; no quota known)", kns, ok)
	}
	if kns, _, _ := c.NamespaceCap("default"); kns != "jobs" {
		t.Fatalf("default: %q", kns)
	}
}

// Check dry-runs the templates on an engine of its own: a refused template is ErrInvalid
// (without the sentinel's words), an API server out of reach ErrUnavailable.
func TestClusterCheckMapsTheDryRunsErrors(t *testing.T) {
	c, _ := testCluster(t)
	cs := c.cfg.Client.(*fake.Clientset)
	down := false
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateActionImpl).Object.(*corev1.Pod)
		switch {
		case down:
			return true, nil, errors.New("connection refused")
		case p.Spec.PriorityClassName == "missing":
			return true, nil, errForbidden("no PriorityClass with name missing was found")
		}
		return true, p, nil
	})
	a := app.Config{AppName: "a", CPUCount: 1, MemoryMB: 64, PodTemplate: app.PodTemplate(`{"spec":{"priorityClassName":"batch"}}`)}
	if err := c.Check(t.Context(), "team", a, nil); err != nil {
		t.Fatalf("good template: %v", err)
	}
	a.PodTemplate = app.PodTemplate(`{"spec":{"priorityClassName":"missing"}}`)
	err := c.Check(t.Context(), "team", a, nil)
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "no PriorityClass") || strings.Contains(err.Error(), ErrPodTemplate.Error()) {
		t.Fatalf("refused template: %v", err)
	}
	down = true
	a.PodTemplate = app.PodTemplate(`{"spec":{"priorityClassName":"batch"}}`)
	if err := c.Check(t.Context(), "team", a, nil); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("API server down: %v", err)
	}
}
