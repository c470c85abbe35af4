package soak

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	}
	want := []string{"agents-killed", "leader-cut-from-master", ClusterDrained, NamespaceMoved, MasterKilled, "apiserver-stopped", "leader-cut-from-apiserver"}
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
	runs := map[string]*podRun{}
	k.observe(runs, pod("t1", jobs.Transient, corev1.PodPending), false)
	k.observe(runs, pod("t1", jobs.Transient, corev1.PodRunning), false)
	k.observe(runs, pod("t1", jobs.Transient, corev1.PodRunning), false)
	k.observe(runs, pod("t1", jobs.Transient, corev1.PodSucceeded), false)
	k.observe(runs, pod("t1", jobs.Transient, corev1.PodSucceeded), true)
	k.observe(runs, pod("t2", jobs.Transient, corev1.PodRunning), false)
	k.observe(runs, pod("t2", jobs.Transient, corev1.PodRunning), true)
	k.observe(runs, pod("t3", jobs.Daemon, corev1.PodRunning), false)
	k.observe(runs, pod("t3", jobs.Daemon, corev1.PodRunning), true)
	k.observe(runs, pod("t4", jobs.Transient, corev1.PodPending), true)
	k.observe(runs, &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false) // not a task's
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

// A third of clusters-real's jobs start on the real Kubernetes, a sixth
// on the real Mesos, each with the embedded engine after it.
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
	if n[ClusterKube] != 10 || n[ClusterReal] != 5 || n[""] != 15 {
		t.Errorf("pinned %v, want 10 on kube, 5 on real, 15 on none", n)
	}
}
