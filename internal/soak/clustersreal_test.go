package soak

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/internal/soak/runlog"
	"github.com/ejcloud/elasticjob/jobs"
)

// With a Kubernetes build the shape has five clusters: kwok's as cheap as
// mesos-local's right after it at home, the real ones after, and the API
// servers' faults held under task_unreachable_timeout.
func TestClustersOnRealEngines(t *testing.T) {
	c := &Clusters{MesosHome: "/nowhere", KubeHome: "/nowhere"}
	if got, want := c.Name(), ShapeClustersReal; got != want {
		t.Errorf("name %s, want %s", got, want)
	}
	if got, want := c.Names(), []string{ClusterLocal, ClusterRemote, ClusterReal, ClusterKube, ClusterKwok}; !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	if got, want := c.home(), []string{ClusterRemote, ClusterKwok, ClusterReal, ClusterKube, ClusterLocal}; !slices.Equal(got, want) {
		t.Errorf("home %v, want %v", got, want)
	}
	if got := len(c.destinations()); got != 6 {
		t.Errorf("%d destinations, want each of the 5 clusters and all of them", got)
	}
	var names []string
	for _, k := range c.Faults() {
		names = append(names, k.Name)
		if (k.Name == "apiserver-stopped" || k.Name == "leader-cut-from-apiserver") && k.MaxHold >= clustersUnreachable {
			t.Errorf("%s held up to %s, not under task_unreachable_timeout %s", k.Name, k.MaxHold, clustersUnreachable)
		}
		if k.Name == NodeCrashed && (k.MinHold >= podGCQuarantine || k.MaxHold <= nodeGoneBound) {
			t.Errorf("%s held %s-%s: the node must come back both before the pod GC's quarantine (%s) and after its pods' deletion (%s)",
				k.Name, k.MinHold, k.MaxHold, podGCQuarantine, nodeGoneBound)
		}
	}
	want := []string{"agents-killed", "leader-cut-from-master", ClusterDrained, NamespaceMoved, MasterKilled, "apiserver-stopped", "leader-cut-from-apiserver", NodeGone, NodeCrashed}
	if !slices.Equal(names, want) {
		t.Errorf("faults %v, want %v", names, want)
	}
	if kubeLostAfter <= clustersUnreachable {
		t.Errorf("lost_after %s of the Kubernetes clusters within a hold's bound %s", kubeLostAfter, clustersUnreachable)
	}
	if _, err := c.startKube(context.Background()); err == nil {
		t.Error("a missing build started")
	}
	if _, err := NewShape(Config{Shape: ShapeClustersReal, K8sHome: "/k"}, "runs.jsonl"); err == nil || !strings.Contains(err.Error(), "-mesos-home") {
		t.Errorf("clusters-real without a Mesos build: %v", err)
	}
}

// The kwok cluster's recorder: a pod's start once kwok runs it, with what
// its payload says, its end once it ends or is deleted first; a DAEMON's
// start alone; each once, however often the pod is seen again (a list
// after the watch ended).
func TestKwokRecordsItsPods(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	w, err := runlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	k := &kwokCluster{w: w, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	pod := func(task string, typ jobs.ExecutionType, phase corev1.PodPhase) *corev1.Pod {
		cfg := jobs.Default()
		cfg.JobName, cfg.JobExecutionType = "j", typ
		data, err := json.Marshal(jobs.TaskData{Version: jobs.TaskDataVersion, App: app.Config{AppName: "a"}, ShardingContext: jobs.ShardingContext{JobName: "j", ShardingItem: 1}, ExecutionSource: "CRON", Job: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + task, Annotations: map[string]string{kube.AnnotationTask: task}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "task", Env: []corev1.EnvVar{{Name: kube.EnvTaskData, Value: string(data)}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	k.runs = map[string]*podRun{}
	k.observe(pod("t1", jobs.Transient, corev1.PodPending), false)
	k.observe(pod("t1", jobs.Transient, corev1.PodRunning), false)
	k.observe(pod("t1", jobs.Transient, corev1.PodRunning), false)
	k.observe(pod("t1", jobs.Transient, corev1.PodSucceeded), false)
	k.observe(pod("t1", jobs.Transient, corev1.PodSucceeded), true)
	k.observe(pod("t2", jobs.Transient, corev1.PodRunning), false)
	k.observe(pod("t2", jobs.Transient, corev1.PodRunning), true)
	k.observe(pod("t3", jobs.Daemon, corev1.PodRunning), false)
	k.observe(pod("t3", jobs.Daemon, corev1.PodRunning), true)
	k.observe(pod("t4", jobs.Transient, corev1.PodPending), true)
	k.observe(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false) // not a task's
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		s := l.Ev + " " + l.Task + " " + l.State
		if l.Ev == runlog.Start {
			s += l.Job + "/" + l.Source
		}
		got = append(got, strings.TrimSpace(s))
	}
	want := []string{"start t1 j/CRON", "end t1 TASK_FINISHED", "start t2 j/CRON", "end t2 TASK_KILLED", "start t3 j/CRON"}
	if !slices.Equal(got, want) {
		t.Errorf("run log %q, want %q", got, want)
	}
}

// A node gone with its runs: kwok stopped while the runs there are
// recorded (each still going lost, as it went, a start not seen yet
// recorded first, a pod already ended as it ended), the node deleted and
// kwok started again; the other node's runs and the pods' later deletion
// record nothing more.
func TestKwokLosesANodeWithItsRuns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.jsonl")
	w, err := runlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(task, node string, typ jobs.ExecutionType, phase corev1.PodPhase) *corev1.Pod {
		cfg := jobs.Default()
		cfg.JobName, cfg.JobExecutionType = "j", typ
		data, err := json.Marshal(jobs.TaskData{Version: jobs.TaskDataVersion, App: app.Config{AppName: "a"}, ShardingContext: jobs.ShardingContext{JobName: "j"}, ExecutionSource: "CRON", Job: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + task, Namespace: kubeNS, Annotations: map[string]string{kube.AnnotationTask: task},
			Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy}},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "task", Env: []corev1.EnvVar{{Name: kube.EnvTaskData, Value: string(data)}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	seen := []*corev1.Pod{pod("going", "kwok-0", jobs.Transient, corev1.PodRunning), pod("ended", "kwok-0", jobs.Transient, corev1.PodRunning),
		pod("daemon", "kwok-0", jobs.Daemon, corev1.PodRunning), pod("other", "kwok-1", jobs.Transient, corev1.PodRunning)}
	now := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-0", Labels: map[string]string{"type": "kwok"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-1", Labels: map[string]string{"type": "kwok"}}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kwok-1", Namespace: nodeLeaseNS}},
		seen[0], pod("ended", "kwok-0", jobs.Transient, corev1.PodSucceeded), seen[2], seen[3],
		pod("unseen", "kwok-0", jobs.Transient, corev1.PodRunning), pod("pending", "kwok-0", jobs.Transient, corev1.PodPending)}
	kwok := &proc{name: "kwok", bin: "sleep", args: []string{"60"}, log: filepath.Join(dir, "kwok.log")}
	if err := kwok.start(); err != nil {
		t.Fatal(err)
	}
	defer kwok.kill()
	k := &kwokCluster{w: w, log: slog.New(slog.DiscardHandler), cs: fake.NewClientset(now...), kwok: kwok, runs: map[string]*podRun{}}
	for _, p := range seen {
		k.observe(p, false)
	}
	name, err := k.loseNode(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err != nil || name != "kwok-0" {
		t.Fatalf("lost %q, %v; want kwok-0 (running the most task pods)", name, err)
	}
	if !kwok.running() {
		t.Error("kwok not started again")
	}
	if _, err := k.cs.CoreV1().Nodes().Get(context.Background(), "kwok-0", metav1.GetOptions{}); err == nil {
		t.Error("the node lost is still there")
	}
	// the new kwok process must take the node left: its lease, the dead one's, goes
	if _, err := k.cs.CoordinationV1().Leases(nodeLeaseNS).Get(context.Background(), "kwok-1", metav1.GetOptions{}); err == nil {
		t.Error("the lease of the node left is still there: the new kwok would not play it")
	}
	k.observe(pod("going", "kwok-0", jobs.Transient, corev1.PodRunning), true) // the pod GC's deletion
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, strings.TrimSpace(l.Ev+" "+l.Task+" "+l.State))
	}
	want := []string{"start going", "start ended", "start daemon", "start other", "end ended TASK_FINISHED", "end going TASK_LOST", "start unseen", "end unseen TASK_LOST"}
	if !slices.Equal(got, want) {
		t.Errorf("run log %q, want %q", got, want)
	}
	k.cs = fake.NewClientset(now[1])
	if _, err := k.loseNode(context.Background(), rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "none to lose") {
		t.Errorf("the last node lost: %v", err)
	}
}

// A third of clusters-real's jobs start on the real Kubernetes, a sixth
// on the real Mesos and a sixth on kwok's, each with the embedded engine
// after it.
func TestClustersRealPinsJobs(t *testing.T) {
	c := ClustersReal{&Clusters{MesosHome: "/m", KubeHome: "/k"}}
	n := map[string]int{}
	for i := range 30 {
		to := c.Pinned(i)
		if len(to) == 0 {
			n[""]++
			continue
		}
		if len(to) != 2 || to[1] != ClusterLocal {
			t.Errorf("job %d names %v, want one cluster and local", i, to)
		}
		n[to[0]]++
	}
	if n[ClusterKube] != 10 || n[ClusterReal] != 5 || n[ClusterKwok] != 5 || n[""] != 10 {
		t.Errorf("pinned %v, want 10 on kube, 5 on real, 5 on kwok, 10 on none", n)
	}
}
