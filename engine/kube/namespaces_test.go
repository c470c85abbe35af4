package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	tstate "github.com/ejcloud/elasticjob/task"
)

func kubeNS(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
}

func quota(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceRequestsCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceRequestsMemory] = resource.MustParse(mem)
	}
	return l
}

// mapped is the scheduler's mapping in the tests: default in "jobs", others in "ej-" + name,
// "broken" in none.
func mapped(ns string) (string, error) {
	if ns == "broken" {
		return "", errors.New("namespace broken has no Kubernetes namespace")
	}
	return "ej-" + ns, nil
}

func launchIn(ns, job, node string) engine.TaskLaunch {
	key := namespace.Key(ns, job)
	tid := jobs.NewTaskID(key, 0, jobs.KindReady, node).String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: job, Namespace: ns, TaskID: tid, ShardingTotalCount: 1},
		Job: jobs.Config{JobName: key, JobExecutionType: jobs.Transient, ShardingTotalCount: 1}, App: app.Config{AppName: namespace.Key(ns, "a"), CPUCount: 0.1, MemoryMB: 16}}
	return engine.TaskLaunch{TaskID: tid, AgentID: node, CPUs: 0.5, MemMB: 64, Task: td,
		Executor: engine.ExecutorSpec{ID: jobs.ExecutorID(namespace.Key(ns, "a"), node), CPUs: 0.1, MemMB: 16}}
}

// waitFor polls cond (the informers deliver on their own goroutines) for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPodsRunInTheirNamespacesKubernetesNamespace: each scheduler namespace's pods are
// created in its Kubernetes namespace, killed there, and a new engine adopts them from
// every namespace; a missing Kubernetes namespace closes the namespace (and a launch into
// it is dropped with the reason), a ResourceQuota caps it at what it leaves.
func TestPodsRunInTheirNamespacesKubernetesNamespace(t *testing.T) {
	cs := fake.NewClientset(node("n1", "8", "16Gi", false), kubeNS("jobs"), kubeNS("ej-pay"), kubeNS("ej-search"),
		quota("ej-search", "compute", rl("2", "1Gi"), rl("1500m", "256Mi")))
	cfg := Config{Client: cs, Namespace: "jobs", NamespaceOf: mapped, ExecutorImage: "img", SchedulerURLs: []string{"http://s"},
		TaskToken: func(string) string { return "t" }, FrameworkID: "fw"}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := newChanHandler()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx, h); close(done) }()
	offers := h.offers(t)
	ls := []engine.TaskLaunch{launchIn("default", "d", "n1"), launchIn("pay", "p", "n1"), launchIn("search", "s", "n1"), launchIn("team", "x", "n1")}
	if err := e.Accept(ctx, []string{offers[0].ID}, ls, -1); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"jobs", "ej-pay", "ej-search"} {
		td := ls[i].Task
		if _, err := cs.CoreV1().Pods(want).Get(ctx, podName(td.Job.JobName, 0, ls[i].TaskID), metav1.GetOptions{}); err != nil {
			t.Errorf("the pod of %s is not in %s: %v", ls[i].TaskID, want, err)
		}
	}
	// ej-team does not exist: the launch is dropped with the reason, never created.
	for st := range h.updates {
		if st.TaskID == ls[3].TaskID {
			if st.State != tstate.Dropped || !strings.Contains(st.Message, "Kubernetes namespace ej-team does not exist") {
				t.Errorf("launch into a missing namespace: %+v", st)
			}
			break
		}
	}

	caps := e.NamespaceCaps([]string{"default", "pay", "search", "team", "broken"})
	if _, ok := caps["default"]; ok {
		t.Errorf("default capped: %+v", caps["default"])
	}
	if _, ok := caps["pay"]; ok {
		t.Errorf("pay (no quota) capped: %+v", caps["pay"])
	}
	if c := caps["team"]; !strings.Contains(c.Closed, "ej-team does not exist") {
		t.Errorf("team: %+v", c)
	}
	if c := caps["broken"]; !strings.Contains(c.Closed, "has no Kubernetes namespace") {
		t.Errorf("broken: %+v", c)
	}
	// search: the quota leaves 0.5 CPU and 768 MB beyond what is used; its own pod (0.6 CPU and
	// 80 MB: its shard's 0.5 CPU and 64 MB and its executor's) counts as the round's use.
	c := caps["search"]
	if !c.Capped || fmt.Sprintf("%.2f/%.0f", c.CPUs, c.MemMB) != "1.10/848" || !strings.Contains(c.Name, "compute of Kubernetes namespace ej-search") {
		t.Errorf("search: %+v", c)
	}

	// Kill deletes the pod in its namespace.
	if err := e.Kill(ctx, ls[1].TaskID, ""); err != nil {
		t.Fatal(err)
	}
	td := ls[1].Task
	waitFor(t, "the killed pay pod deleted from ej-pay", func() bool {
		_, err := cs.CoreV1().Pods("ej-pay").Get(ctx, podName(td.Job.JobName, 0, ls[1].TaskID), metav1.GetOptions{})
		return err != nil
	})
	cancel()
	<-done

	// A new term (the next leader) adopts the pods of every namespace.
	e2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h2 := newChanHandler()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { _ = e2.Run(ctx2, h2) }()
	h2.offers(t)
	e2.mu.Lock()
	got := map[string]string{}
	for id, tk := range e2.tasks {
		got[id] = tk.ns
	}
	e2.mu.Unlock()
	if got[ls[0].TaskID] != "jobs" || got[ls[2].TaskID] != "ej-search" {
		t.Errorf("adopted: %v", got)
	}
}

func TestQuotaRoom(t *testing.T) {
	pods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}
	cs := fake.NewClientset()
	e, _ := New(Config{Client: cs, Namespace: "jobs", ExecutorImage: "img", SchedulerURLs: []string{"http://s"}, TaskToken: func(string) string { return "" }})
	for _, tc := range []struct {
		name   string
		quotas []*corev1.ResourceQuota
		want   string // cpus/mem, or "none"
	}{
		{"none", nil, "none"},
		{"requests", []*corev1.ResourceQuota{quota("q", "a", rl("2", "2Gi"), rl("500m", "1Gi"))}, "1.50/1024"},
		{"the least of two", []*corev1.ResourceQuota{quota("q", "a", rl("2", ""), rl("500m", "")), quota("q", "b", rl("", "1Gi"), rl("", "1Gi"))}, "1.50/0"},
		{"limits too", []*corev1.ResourceQuota{quota("q", "a", corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("1")},
			corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("250m")})}, "0.75/inf"},
		{"pods used up", []*corev1.ResourceQuota{quota("q", "a", pods, pods)}, "0.00/0"},
		{"over (a quota lowered below its use)", []*corev1.ResourceQuota{quota("q", "a", rl("1", ""), rl("2", ""))}, "0.00/inf"},
		{"scoped: not read", []*corev1.ResourceQuota{func() *corev1.ResourceQuota {
			q := quota("q", "a", rl("1", ""), nil)
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
			return q
		}()}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, q := range tc.quotas {
				_, _ = cs.CoreV1().ResourceQuotas("q").Create(context.Background(), q, metav1.CreateOptions{})
			}
			e.cfg.Client = cs
			var f = newFactory(cs)
			e.ns.start(f)
			stop := make(chan struct{})
			defer close(stop)
			f.Start(stop)
			f.WaitForCacheSync(stop)
			room, _, ok := e.ns.quotaRoom("q")
			got := "none"
			if ok {
				mem := fmt.Sprintf("%.0f", room.mem)
				if room.mem >= 1<<40 {
					mem = "inf"
				}
				got = fmt.Sprintf("%.2f/%s", room.cpus, mem)
			}
			if got != tc.want {
				t.Errorf("room %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseShare(t *testing.T) {
	if r := parseShare("cpus=0.05,mem=8"); r != (res{0.05, 8}) {
		t.Errorf("%+v", r)
	}
	if r := parseShare("junk"); r != (res{}) {
		t.Errorf("%+v", r)
	}
}

func newFactory(cs *fake.Clientset) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactory(cs, 0)
}

// BenchmarkNamespaceCaps is the Kubernetes engine's part of a launch round: 100 namespaces,
// each with a ResourceQuota, and 10,000 live pods.
func BenchmarkNamespaceCaps(b *testing.B) {
	cs := fake.NewClientset()
	e, _ := New(Config{Client: cs, Namespace: "jobs", NamespaceOf: mapped, ExecutorImage: "img", SchedulerURLs: []string{"http://s"},
		TaskToken: func(string) string { return "" }})
	f := newFactory(cs)
	e.ns.start(f)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("team%d", i)
		kns, _ := mapped(names[i])
		_, _ = cs.CoreV1().Namespaces().Create(context.Background(), kubeNS(kns), metav1.CreateOptions{})
		_, _ = cs.CoreV1().ResourceQuotas(kns).Create(context.Background(), quota(kns, "compute", rl("100", "100Gi"), rl("10", "10Gi")), metav1.CreateOptions{})
	}
	for i := range 10000 {
		kns, _ := mapped(names[i%100])
		e.tasks[fmt.Sprint(i)] = &task{id: fmt.Sprint(i), ns: kns, req: res{0.2, 64}, share: res{0.05, 16}}
	}
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	b.ReportAllocs()
	for b.Loop() {
		if len(e.NamespaceCaps(names)) != 100 {
			b.Fatal("not every namespace capped")
		}
	}
}
