//go:build e2e

package realkube

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/jobs"
)

// TestHTTPJobsWithoutAppOnKubernetes runs HTTP jobs that name no app in two namespaces on
// the real cluster. On Mesos such jobs run in their namespace's own HTTP executor
// (jobs.HTTPApp); on Kubernetes every shard is a pod of its own, and a namespace's boundary
// is its Kubernetes namespace. Each fire's request reaches the test's endpoint once with its
// shard's context, and its run is recorded as succeeded; a 500 is recorded as a failure with
// the status in its cause; every shard's pod ran in its namespace's Kubernetes namespace,
// as that namespace's HTTP executor (app and executor id), under that Kubernetes
// namespace's service account (pay's job names one of its own in a job podTemplate, which a
// job without an app may carry), in the executor image with no token mounted. The HTTP
// executor's share of a pod counts against its namespace: a job whose pod would go past its
// Kubernetes namespace's ResourceQuota waits for it, saying so, and runs once it is raised.
func TestHTTPJobsWithoutAppOnKubernetes(t *testing.T) {
	requireK8s(t)
	ctx := context.Background()
	base := namespace(t)
	kns := map[string]string{"pay": kubeNamespace(t, base+"-pay"), "search": kubeNamespace(t, base+"-search")}
	if _, err := admin.CoreV1().ServiceAccounts(kns["pay"]).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pay-caller"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// tight's quota leaves 0.12 CPU: its 0.05-CPU shard's pod, with the HTTP executor's share, asks 0.15.
	kns["tight"] = kubeNamespace(t, base+"-tight")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("120m"), corev1.ResourceRequestsMemory: resource.MustParse("1Gi")}}}
	if _, err := admin.CoreV1().ResourceQuotas(kns["tight"]).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := startEndpoint(t)
	seen := watchTaskPods(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: base, extra: []string{"--kube-namespaces",
		"pay=" + kns["pay"] + ",search=" + kns["search"] + ",tight=" + kns["tight"]}})
	eventually(t, waitLong, s.subscribed, "the scheduler to subscribe")

	type fire struct{ ns, job, path string }
	fires := []fire{{"pay", "ping", "/pay/ok"}, {"search", "ping", "/search/ok"}, {"search", "broken", "/search/fail"}}
	for _, f := range fires {
		s.must(http.MethodPut, "/api/namespaces/"+f.ns, map[string]any{})
		j := map[string]any{"jobName": f.job, "jobType": "HTTP", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 2,
			"shardingItemParameters": "0=" + f.ns + "-a,1=" + f.ns + "-b", "cpuCount": 0.05, "memoryMB": 16,
			"props": map[string]string{"http.url": ep.url + f.path, "http.method": "POST", "http.data": f.ns + "-body"}}
		if f.ns == "pay" {
			j["podTemplate"] = map[string]any{"spec": map[string]any{"serviceAccountName": "pay-caller"}}
		}
		s.must(http.MethodPost, "/api/job/register?namespace="+f.ns, j)
		s.must(http.MethodPost, "/api/job/trigger?namespace="+f.ns, f.job)
	}
	for _, f := range fires {
		eventually(t, waitLong, func() bool { return len(endedIn(s, f.ns, f.job)) == 2 }, "%s's job %s to end both shards", f.ns, f.job)
	}

	for _, f := range fires {
		ran := endedIn(s, f.ns, f.job)
		for _, e := range ran {
			ok := f.path != "/search/fail"
			if e.Success != ok {
				t.Errorf("%s's %s shard %d (%s): success %v, want %v (cause %v)", f.ns, f.job, e.ShardingItem, e.TaskID, e.Success, ok, e.FailureCause)
			}
			if !ok && (e.FailureCause == nil || !strings.Contains(*e.FailureCause, "500")) {
				t.Errorf("%s's %s shard %d failed without the status in its cause: %v", f.ns, f.job, e.ShardingItem, e.FailureCause)
			}
			reqs := ep.of(e.TaskID)
			if len(reqs) != 1 {
				t.Errorf("%s's %s shard %d (%s) reached the endpoint %d times, want once: %+v", f.ns, f.job, e.ShardingItem, e.TaskID, len(reqs), reqs)
				continue
			}
			r, want := reqs[0], f.ns+"-"+string(rune('a'+e.ShardingItem))
			if r.path != f.path || r.body != f.ns+"-body" || r.ctx.JobName != f.job || r.ctx.Namespace != f.ns ||
				r.ctx.ShardingItem != e.ShardingItem || r.ctx.ShardingTotalCount != 2 || r.ctx.ShardingParameter != want {
				t.Errorf("%s's %s shard %d: request %+v, want path %s, body %s-body, context of job %s in %s, item %d of 2, parameter %s",
					f.ns, f.job, e.ShardingItem, r, f.path, f.ns, f.job, f.ns, e.ShardingItem, want)
			}
			p, ok := seen.of(e.TaskID)
			if !ok {
				t.Errorf("%s's %s shard %d: no pod of task %s was seen", f.ns, f.job, e.ShardingItem, e.TaskID)
				continue
			}
			app, sa := jobs.HTTPApp(f.ns), "default"
			if f.ns == "pay" {
				sa = "pay-caller"
			}
			c := p.Spec.Containers[0]
			t.Logf("%s's %s shard %d: success %v, pod %s/%s as %s, app %s, requests cpu %s memory %s", f.ns, f.job, e.ShardingItem, e.Success,
				p.Namespace, p.Name, p.Spec.ServiceAccountName, p.Annotations[kube.AnnotationApp], c.Resources.Requests.Cpu(), c.Resources.Requests.Memory())
			switch {
			case p.Namespace != kns[f.ns]:
				t.Errorf("%s's %s shard %d ran in Kubernetes namespace %s, want %s", f.ns, f.job, e.ShardingItem, p.Namespace, kns[f.ns])
			case p.Annotations[kube.AnnotationApp] != app || !strings.HasPrefix(p.Annotations[kube.AnnotationExec], app+"@-@"):
				t.Errorf("%s's %s shard %d ran as app %q, executor %q, want %s's HTTP executor %s", f.ns, f.job, e.ShardingItem,
					p.Annotations[kube.AnnotationApp], p.Annotations[kube.AnnotationExec], f.ns, app)
			case p.Spec.ServiceAccountName != sa:
				t.Errorf("%s's %s shard %d ran as service account %s/%s, want %s", f.ns, f.job, e.ShardingItem, p.Namespace, p.Spec.ServiceAccountName, sa)
			case p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken:
				t.Errorf("%s's %s shard %d: its pod mounts the service account's token", f.ns, f.job, e.ShardingItem)
			case c.Image != executorImage || len(c.Command) == 0 || c.Command[0] != kube.ExecutorInImage:
				t.Errorf("%s's %s shard %d ran %s %v, want the executor image's executor", f.ns, f.job, e.ShardingItem, c.Image, c.Command)
			}
		}
	}
	if n := ep.total(); n != 2*len(fires) {
		t.Errorf("the endpoint had %d requests, want %d (two shards of %d fires)", n, 2*len(fires), len(fires))
	}

	// The HTTP executor's share counts against its namespace: tight's job waits for its
	// ResourceQuota instead of a pod going past it, and runs once the quota is raised.
	s.must(http.MethodPut, "/api/namespaces/tight", map[string]any{})
	s.must(http.MethodPost, "/api/job/register?namespace=tight", map[string]any{"jobName": "ping", "jobType": "HTTP", "shardingTotalCount": 1,
		"cpuCount": 0.05, "memoryMB": 16, "props": map[string]string{"http.url": ep.url + "/tight/ok"}})
	s.must(http.MethodPost, "/api/job/trigger?namespace=tight", "ping")
	var why string
	eventually(t, waitLong, func() bool {
		why = waitingIn(s, "tight", "ping")
		return strings.Contains(why, `"rule":"quota"`) || len(endedIn(s, "tight", "ping")) > 0
	}, "tight's job to wait for its quota")
	if !strings.Contains(why, "0.1 CPUs and 32 MB for its app's executor") {
		t.Fatalf("tight's job did not wait for its quota counting its HTTP executor: waiting %s, %d requests, pods %v", why, ep.total(), pods(t, kns["tight"], ""))
	}
	q, err := admin.CoreV1().ResourceQuotas(kns["tight"]).Get(ctx, "compute", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("150m")
	if _, err := admin.CoreV1().ResourceQuotas(kns["tight"]).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool { return len(endedIn(s, "tight", "ping")) == 1 }, "tight's job to run once its quota is raised")
	if e := endedIn(s, "tight", "ping")[0]; !e.Success || len(ep.of(e.TaskID)) != 1 {
		t.Errorf("tight's run %+v: %d requests", e, len(ep.of(e.TaskID)))
	} else if p, ok := seen.of(e.TaskID); !ok || p.Namespace != kns["tight"] || p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 150 {
		t.Errorf("tight's run's pod: %v", p)
	}
}

// endpoint is the HTTP jobs' target, on the host's loopback (the task pods share the host's
// network): /NS/ok answers 200, /NS/fail 500; it keeps every request by its task id.
type endpoint struct {
	url  string
	mu   sync.Mutex
	reqs map[string][]endpointReq
}

type endpointReq struct {
	path, body string
	ctx        jobs.ShardingContext
}

func startEndpoint(t *testing.T) *endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := &endpoint{url: "http://" + ln.Addr().String(), reqs: map[string][]endpointReq{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
		var sc jobs.ShardingContext
		_ = json.Unmarshal([]byte(r.Header.Get("shardingContext")), &sc)
		ep.mu.Lock()
		ep.reqs[sc.TaskID] = append(ep.reqs[sc.TaskID], endpointReq{path: r.URL.Path, body: string(b), ctx: sc})
		ep.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/fail") {
			http.Error(w, "the endpoint fails on purpose", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("pong " + sc.Namespace + "\n"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ep
}

func (ep *endpoint) of(task string) []endpointReq {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return append([]endpointReq(nil), ep.reqs[task]...)
}

func (ep *endpoint) total() int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	n := 0
	for _, r := range ep.reqs {
		n += len(r)
	}
	return n
}

// taskPods keeps the last version seen of every task pod of the cluster, by task id.
type taskPods struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod
}

func (w *taskPods) of(task string) (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pods[task]
	return p, ok
}

// watchTaskPods watches the task pods of every Kubernetes namespace until the test ends (the
// scheduler deletes a finished pod once its outcome is committed).
func watchTaskPods(t *testing.T) *taskPods {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := admin.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	tp := &taskPods{pods: map[string]*corev1.Pod{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Error {
				tp.mu.Lock()
				tp.pods[p.Annotations[kube.AnnotationTask]] = p
				tp.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return tp
}
