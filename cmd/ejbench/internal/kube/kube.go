package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/engine/kube/image"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The kube scenario: on the real single-node Kubernetes of
// EJ_K8S_HOME (default ../shared/k8s-1.37, beside the repository), side by side in one run, 3 pods running `echo; sleep 1`:
//   - floor: the 3 pods created bound by hand (nodeName), at once: the kubelet's floor;
//   - job: a Kubernetes Indexed Job of 3 completions (kube-scheduler places them);
//   - ours: a trigger of a 3-shard job of this scheduler → all 3 pods Running, and → all 3
//     shards recorded as ended (history);
//
// and pods created and finished per second (20 one-shard executions against 20 hand-made
// pods: the kubelet's own ceiling), the scheduler's CPU per pod, and a cron fire → pods
// Running against a CronJob's scheduled time → pods Running.

const kubeRounds = 5

type kubeBench struct {
	cs    kubernetes.Interface
	ns    string
	image string
	// created is, after watchPods, when its watch had seen all n pods added (from its start).
	created time.Duration
	// limits: when set, the pods by hand, the Indexed Job's and the CronJob's get these
	// requests = limits, as the scheduler's pods do (the same pods as ours); nil: requests
	// 50m CPU and no limit.
	limits corev1.ResourceList
	// command: when set, what the pods by hand and the Indexed Job's run instead of
	// `echo hello; sleep 1`.
	command string
	// template: when set, the Indexed Job's pod spec instead of kb.container()'s pods.
	template *corev1.PodSpec
	// dnsPolicy: the pods by hand's DNS policy ("": the default).
	dnsPolicy corev1.DNSPolicy
	// seen: when set, watchPods gives it every pod it sees and when (the timeline part).
	seen func(p *corev1.Pod, typ watch.EventType, at time.Duration)
}

// Our pods' resources: the shard's cpuCount and memoryMB plus its share of the app b's
// executor (0.03 CPU, 64 MB): k3's 3 pods a third each, c1's one pod all of it.
var (
	k3Res = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("60m"), corev1.ResourceMemory: resource.MustParse("54Mi")}
	c1Res = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("96Mi")}
)

// Run runs the kube scenario (above) on a single-node Kubernetes of its own,
// started from EJ_K8S_HOME and stopped at the end.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	home := os.Getenv("EJ_K8S_HOME")
	if home == "" {
		home = "../shared/k8s-1.37" // beside the repository (bench.sh runs from its root)
	}
	if _, err := os.Stat(filepath.Join(home, "scripts/start.sh")); err != nil {
		r.Note("kube: skipped: no Kubernetes build at " + home + " (set EJ_K8S_HOME)")
		return nil
	}
	tmp, err := os.MkdirTemp("", "ej-bench-kube-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tarball, err := benchImage(tmp)
	if err != nil {
		return err
	}
	runDir := filepath.Join(tmp, "k8s")
	start := exec.Command(filepath.Join(home, "scripts/start.sh"))
	start.Env = append(os.Environ(), "K8S_RUN="+runDir, "K8S_SCHED=1")
	if out, err := start.CombinedOutput(); err != nil {
		return fmt.Errorf("start.sh: %v\n%s", err, out)
	}
	defer func() {
		stop := exec.Command(filepath.Join(home, "scripts/stop.sh"))
		stop.Env = append(os.Environ(), "K8S_RUN="+runDir, "K8S_WIPE=1")
		_ = stop.Run()
	}()
	bin, _ := exec.Command(filepath.Join(home, "scripts/bin.sh")).Output()
	ctr := filepath.Join(strings.TrimSpace(string(bin)), "ctr")
	if out, err := exec.Command(ctr, "-a", filepath.Join(runDir, "containerd/containerd.sock"), "-n", "k8s.io", "images", "import", "--local", tarball).CombinedOutput(); err != nil {
		return fmt.Errorf("import: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(runDir, "admin.kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	kb := &kubeBench{cs: cs, ns: "default", image: "localhost/elasticjob-executor:bench"}
	if err := kb.waitSA(ctx); err != nil {
		return err
	}
	var floorRun, jobEnd time.Duration
	if o.kubeParts["floor"] {
		floorRun, _ = kb.bothWays(ctx, r, "floor", "3 pods bound by hand", "all Succeeded", "the floor", kb.handPods)
	}
	if o.kubeParts["job"] {
		_, jobEnd = kb.bothWays(ctx, r, "job", "Indexed Job of 3", "Complete", "", kb.indexedJob)
	}
	if err := kb.ours(ctx, o, r, kubeconfig, tmp, floorRun, jobEnd); err != nil {
		return err
	}
	if o.kubeParts["timeline"] {
		if err := kb.timelines(ctx, o, kubeconfig, tmp); err != nil {
			return err
		}
	}
	if o.kubeParts["binding"] {
		return kb.bindingModes(ctx, o, r, kubeconfig, tmp)
	}
	return nil
}

// bothWays times a way of starting 3 pods with our pods' resources (requests = limits: the
// CPU limit, a CFS quota of 6 ms per 100 ms, slows runc and the container's start as it does
// ours), then with requests 50m CPU and no limit; it returns the medians of the first.
func (kb *kubeBench) bothWays(ctx context.Context, r *bench.Report, name, what, done, goal string, f func(ctx context.Context, label string) (time.Duration, time.Duration, error)) (time.Duration, time.Duration) {
	kb.limits = k3Res
	run, end := kb.rounds(ctx, name, f)
	r.Add("kube", fmt.Sprintf("%s, ours' resources (requests = limits = 60m CPU, 54 Mi): all Running / %s (median of 5)", what, done), fmt.Sprintf("%s / %s", bench.Secs(run), bench.Secs(end)), goal, nil)
	kb.limits = nil
	run2, end2 := kb.rounds(ctx, name+"-burst", f)
	r.Add("kube", fmt.Sprintf("%s, requests 50m CPU and no limit: all Running / %s (median of 5)", what, done), fmt.Sprintf("%s / %s", bench.Secs(run2), bench.Secs(end2)), "", nil)
	return run, end
}

// benchImage builds the static executor and its image as make image does.
func benchImage(tmp string) (string, error) {
	exe := filepath.Join(tmp, "elasticjob-executor")
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "./cmd/executor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the executor: %v\n%s", err, out)
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return "", fmt.Errorf("busybox: %v (apt-get install busybox-static)", err)
	}
	out := filepath.Join(tmp, "image.tar")
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return out, image.Write(f, image.Spec{Ref: "localhost/elasticjob-executor:bench", Executor: exe, Busybox: "/bin/busybox", Applets: strings.Fields(string(list))})
}

func (kb *kubeBench) waitSA(ctx context.Context) error {
	for i := 0; i < 300; i++ {
		if _, err := kb.cs.CoreV1().ServiceAccounts(kb.ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no default service account")
}

// rounds runs one way of starting 3 pods kubeRounds times; the medians of all Running and
// all done.
func (kb *kubeBench) rounds(ctx context.Context, name string, f func(ctx context.Context, label string) (time.Duration, time.Duration, error)) (time.Duration, time.Duration) {
	var runs, ends []time.Duration
	for i := range kubeRounds {
		run, end, err := f(ctx, fmt.Sprintf("%s-%d", name, i))
		if err != nil {
			bench.Logf("kube %s round %d: %v", name, i, err)
			continue
		}
		runs, ends = append(runs, run), append(ends, end)
	}
	return median(runs), median(ends)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func (kb *kubeBench) container() corev1.Container {
	cmd := "echo hello; sleep 1"
	if kb.command != "" {
		cmd = kb.command
	}
	c := corev1.Container{Name: "c", Image: kb.image, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", cmd},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}
	if kb.limits != nil {
		c.Resources = corev1.ResourceRequirements{Requests: kb.limits, Limits: kb.limits}
	}
	return c
}

// watchPods follows the pods with label run=label until n are seen Running and n done; it
// returns when they were, counted from t0 (set by start, called once the watch is open).
func (kb *kubeBench) watchPods(ctx context.Context, sel string, n int, start func() error, done func(p *corev1.Pod) bool) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := kb.cs.CoreV1().Pods(kb.ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	t0 := time.Now()
	if err := start(); err != nil {
		return 0, 0, err
	}
	running, ended, added := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var allRunning, allEnded time.Duration
	kb.created = 0
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if ok && kb.seen != nil {
			kb.seen(p, ev.Type, time.Since(t0))
		}
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		if added[p.Name] = true; len(added) == n && kb.created == 0 {
			kb.created = time.Since(t0)
		}
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
			running[p.Name] = true
		}
		if done(p) {
			ended[p.Name] = true
		}
		if len(running) == n && allRunning == 0 {
			allRunning = time.Since(t0)
		}
		if len(ended) == n && allEnded == 0 {
			allEnded = time.Since(t0)
			return allRunning, allEnded, nil
		}
	}
	return 0, 0, fmt.Errorf("watch ended: %v", ctx.Err())
}

func succeeded(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }

// handPods creates 3 pods bound by hand, at once.
func (kb *kubeBench) handPods(ctx context.Context, label string) (time.Duration, time.Duration, error) {
	return kb.handPodsOf(ctx, label, 3)
}

// handPodsOf creates n pods bound by hand (spec.nodeName), at once.
func (kb *kubeBench) handPodsOf(ctx context.Context, label string, n int) (time.Duration, time.Duration, error) {
	defer kb.clean(ctx, "run="+label)
	return kb.watchPods(ctx, "run="+label, n, func() error {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", label, i), Labels: map[string]string{"run": label}},
					Spec: corev1.PodSpec{NodeName: "127.0.0.1", RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true, DNSPolicy: kb.dnsPolicy, Containers: []corev1.Container{kb.container()}}}
				_, err := kb.cs.CoreV1().Pods(kb.ns).Create(ctx, p, metav1.CreateOptions{})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}, succeeded)
}

// indexedJob runs an Indexed Job of 3 completions, 3 at once; done is the Job's completion,
// seen as its 3 pods Succeeded.
func (kb *kubeBench) indexedJob(ctx context.Context, label string) (time.Duration, time.Duration, error) {
	return kb.indexedJobOf(ctx, label, 3)
}

// clean deletes the pods of sel gracefully and waits until they are gone: the kubelet has
// confirmed their end, so the next round starts on a settled node on either side (a force
// deletion left the kubelet still handling the last round's pods while the next one started).
func (kb *kubeBench) clean(ctx context.Context, sel string) {
	_ = kb.cs.CoreV1().Pods(kb.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
	for i := 0; i < 600; i++ {
		l, err := kb.cs.CoreV1().Pods(kb.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && len(l.Items) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchApp is the app of our rounds: echo, then sleep as long as the job's parameter says.
func benchApp() []byte {
	b, _ := harness.TarGz(harness.Scripts(map[string]string{"bin/run.sh": "#!/bin/sh\necho hello\nsleep ${ELASTICJOB_JOB_PARAMETER:-1}\n"})...)
	return b
}

// ours runs this scheduler's rounds, the rate, the CPU per pod and the cron comparison.
func (kb *kubeBench) ours(ctx context.Context, o options, r *bench.Report, kubeconfig, tmp string, floorRun, jobEnd time.Duration) error {
	if !o.kubeParts["ours"] && !o.kubeParts["cpu"] && !o.kubeParts["rate"] && !o.kubeParts["cron"] {
		return nil
	}
	return kb.withScheduler(o, kubeconfig, tmp, "sched", nil, func(api *bench.Client, sp *bench.Scheduler) error {
		if err := api.PostJSON("/api/job/register", `{"jobName":"k3","appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":3,"jobParameter":"1","cpuCount":0.05,"memoryMB":32}`); err != nil {
			return err
		}
		kb.oursParts(ctx, o, r, api, sp, floorRun, jobEnd)
		return nil
	})
}

// withScheduler runs f against a scheduler of its own (data in tmp/name, args after the
// common ones) with the app b published, and stops it.
func (kb *kubeBench) withScheduler(o options, kubeconfig, tmp, name string, args []string, f func(api *bench.Client, sp *bench.Scheduler) error) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(benchApp()) }))
	defer srv.Close()
	dataDir := filepath.Join(tmp, name)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	all := append([]string{"--kube-config", kubeconfig, "--kube-namespace", kb.ns, "--kube-host-network", "true",
		"--kube-image-pull-policy", "Never", "--kube-executor-image", kb.image, "--offer-refuse-seconds", "1s",
		"--debug-pprof", fmt.Sprint(o.kubeProfile)}, o.kubeArgs...)
	sp, err := bench.StartScheduler(o.BinDir, dataDir, append(all, args...)...)
	if err != nil {
		return err
	}
	defer sp.Stop()
	if _, err := sp.WaitHealthy(time.Minute); err != nil {
		return err
	}
	if err := sp.API.PostJSON("/api/app", fmt.Sprintf(`{"appName":"b","appURL":%q,"bootstrapScript":"bin/run.sh","cpuCount":0.03,"memoryMB":64}`, srv.URL+"/b.tgz")); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the informers synced, the first offers in
	return f(sp.API, sp)
}

func (kb *kubeBench) oursParts(ctx context.Context, o options, r *bench.Report, api *bench.Client, sp *bench.Scheduler, floorRun, jobEnd time.Duration) {
	if o.kubeParts["ours"] {
		kb.oursRounds(ctx, r, api, floorRun, jobEnd)
	}
	if o.kubeParts["cpu"] {
		kb.cpu(ctx, o, r, api, sp)
	}
	if o.kubeParts["rate"] {
		kb.rate(ctx, r, api)
	}
	if o.kubeParts["cron"] {
		kb.cron(ctx, r, api)
	}
}

// oursRounds times our trigger → 3 pods Running and → 3 shards ended, against the floor and
// the Indexed Job (when those parts ran).
func (kb *kubeBench) oursRounds(ctx context.Context, r *bench.Report, api *bench.Client, floorRun, jobEnd time.Duration) {
	var runs, ends, made []time.Duration
	for i := range kubeRounds {
		run, end, err := kb.ourRound(ctx, api, "k3", 3, endedRows(api, "k3")+3)
		if err != nil {
			bench.Logf("kube ours round %d: %v", i, err)
			continue
		}
		runs, ends, made = append(runs, run), append(ends, end), append(made, kb.created)
	}
	run, end := median(runs), median(ends)
	r.Add("kube", "ours, trigger → 3 pods created (seen by a watch; median of 5)", bench.Secs(median(made)), "", nil)
	var met, met2 *bool
	goal, goal2 := "", ""
	if floorRun > 0 {
		met, goal = new(run-floorRun <= 100*time.Millisecond), "≤ floor + 100 ms"
	}
	if jobEnd > 0 {
		met2, goal2 = new(end > 0 && end < jobEnd), "< the Indexed Job's completion"
	}
	r.Add("kube", "ours, trigger → 3 pods Running (median of 5)", fmt.Sprintf("%s (floor +%d ms)", bench.Secs(run), (run-floorRun).Milliseconds()), goal, met)
	r.Add("kube", "ours, trigger → 3 shards recorded as ended (median of 5)", bench.Secs(end), goal2, met2)
}

// cpu reports the scheduler's CPU per pod, all of it and above its idle rate, and with
// -kube-profile the top of its CPU profile over the rounds.
func (kb *kubeBench) cpu(ctx context.Context, o options, r *bench.Report, api *bench.Client, sp *bench.Scheduler) {
	idle, ok := idleCPU(sp.PID(), 10*time.Second)
	if !ok {
		return
	}
	prof := filepath.Join(os.TempDir(), "ej-bench-kube-scheduler.cpu.pprof") // kept for go tool pprof
	window := time.Duration(o.kubeRounds) * 8 * time.Second
	profDone := make(chan error, 1)
	if o.kubeProfile {
		go func() { profDone <- bench.FetchCPUProfile(sp.Port, window, prof) }()
	}
	m0, _ := api.Scrape()
	c, ok := kb.cpuPerPod(ctx, api, sp.PID(), o.kubeRounds, o.kubeShards)
	if !ok {
		return
	}
	if m1, err := api.Scrape(); err == nil && m0 != nil {
		d := func(name string, want ...string) float64 {
			return (m1.Sum(name, want...) - m0.Sum(name, want...)) / float64(c.pods)
		}
		r.Add("kube", "offers per pod: received / declined", fmt.Sprintf("%.1f / %.1f", d("elasticjob_offers_total", `outcome="received"`),
			d("elasticjob_offers_total", `outcome="declined"`)), "", nil)
	}
	perPod, above := c.cpu*1000/float64(c.pods), (c.cpu-idle*c.wall)*1000/float64(c.pods)
	met := perPod <= 2
	r.Add("kube", fmt.Sprintf("scheduler CPU per pod (%d executions of %d shards in %.0f s, nothing polling the API): all / above its idle rate", c.pods/o.kubeShards, o.kubeShards, c.wall),
		fmt.Sprintf("%.1f ms / %.1f ms (idle: %.1f ms/s)", perPod, above, idle*1000), "≤ 2 ms", &met)
	if o.kubeProfile {
		if err := <-profDone; err != nil {
			r.Note("kube: scheduler CPU profile: " + err.Error())
		} else {
			bench.ProfileTop(o.BinDir, r, "kube", "scheduler", prof, fmt.Sprintf("over %s from the first round (%s)", window, prof))
		}
	}
}

// idleCPU is the scheduler's CPU seconds per second over d with nothing to do.
func idleCPU(pid int, d time.Duration) (float64, bool) {
	time.Sleep(2 * time.Second) // the previous steps' pods gone
	a, err := bench.ReadProc(pid)
	if err != nil {
		return 0, false
	}
	time.Sleep(d)
	b, err := bench.ReadProc(pid)
	if err != nil {
		return 0, false
	}
	return (b.CPU - a.CPU) / b.Taken.Sub(a.Taken).Seconds(), true
}

// ourRound triggers the job and times its n pods Running and its shards' ends in history
// (want: the history's ended rows after this round).
func (kb *kubeBench) ourRound(ctx context.Context, api *bench.Client, job string, n, want int) (time.Duration, time.Duration, error) {
	var ended time.Duration
	run, _, err := kb.watchPods(ctx, "elasticjob.io/job="+job, n, func() error {
		t0 := time.Now()
		if err := api.Trigger(job); err != nil {
			return err
		}
		go func() {
			for ctx.Err() == nil && time.Since(t0) < 2*time.Minute {
				if endedRows(api, job) >= want {
					ended = time.Since(t0)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		return nil
	}, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < 12000 && ended == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	kb.clean(ctx, "elasticjob.io/job="+job) // gone already: the scheduler deletes finished pods
	return run, ended, nil
}

func endedRows(api *bench.Client, job string) int {
	code, body, err := api.Do(http.MethodGet, "/api/job/events/executions?per_page=500&jobName="+job, "", nil)
	if err != nil || code != http.StatusOK {
		return 0
	}
	return strings.Count(string(body), `"completeTime":"`)
}

// rate: 20 one-shard executions at once against 20 pods bound by hand at once.
func (kb *kubeBench) rate(ctx context.Context, r *bench.Report, api *bench.Client) {
	const n = 20
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rate-%d", i), Labels: map[string]string{"run": "rate"}},
				Spec: corev1.PodSpec{NodeName: "127.0.0.1", RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
					Containers: []corev1.Container{{Name: "c", Image: kb.image, ImagePullPolicy: corev1.PullNever, Command: []string{"true"},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30m")}}}}}}
			_, _ = kb.cs.CoreV1().Pods(kb.ns).Create(ctx, p, metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	for time.Since(t0) < 3*time.Minute {
		l, err := kb.cs.CoreV1().Pods(kb.ns).List(ctx, metav1.ListOptions{LabelSelector: "run=rate"})
		done := 0
		if err == nil {
			for _, p := range l.Items {
				if p.Status.Phase == corev1.PodSucceeded {
					done++
				}
			}
		}
		if done == n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	floor := time.Since(t0)
	kb.clean(ctx, "run=rate")
	for i := range n {
		_ = api.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":"r%d","appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"jobParameter":"0","cpuCount":0.01,"memoryMB":16}`, i))
	}
	time.Sleep(time.Second)
	t1 := time.Now()
	for i := range n {
		_ = api.Trigger(fmt.Sprintf("r%d", i))
	}
	for time.Since(t1) < 3*time.Minute {
		done := 0
		for i := range n {
			if endedRows(api, fmt.Sprintf("r%d", i)) >= 1 {
				done++
			}
		}
		if done == n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	ours := time.Since(t1)
	r.Add("kube", "pods created and finished per second: ours / by hand (20 at once)",
		fmt.Sprintf("%.1f / %.1f", n/ours.Seconds(), n/floor.Seconds()), "the kubelet's ceiling beside", nil)
}

// cron: a cron fire (every 10 s) → pods Running, against a CronJob (every minute) → its
// pod Running, each from the fire's scheduled instant.
func (kb *kubeBench) cron(ctx context.Context, r *bench.Report, api *bench.Client) {
	_ = api.PostJSON("/api/job/register", `{"jobName":"c1","appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"jobParameter":"1","cpuCount":0.05,"memoryMB":32,"cron":"0/10 * * * * ?"}`)
	var oursLag time.Duration
	_, _, err := kb.watchPods(ctx, "elasticjob.io/job=c1", 1, func() error { return nil }, func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning || oursLag != 0 {
			return false
		}
		now := time.Now()
		oursLag = now.Sub(now.Truncate(10 * time.Second))
		return true
	})
	_ = api.PostJSON("/api/job/c1/disable", "")
	if err != nil {
		bench.Logf("kube cron: %v", err)
	}
	kb.limits = c1Res // the same pod as ours
	defer func() { kb.limits = nil }()
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj"}, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"run": "cj"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true, Containers: []corev1.Container{kb.container()}}}}}}}
	var cjLag time.Duration
	cctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	_, _, err = kb.watchPods(cctx, "run=cj", 1, func() error {
		_, err := kb.cs.BatchV1().CronJobs(kb.ns).Create(ctx, cj, metav1.CreateOptions{})
		return err
	}, func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning || cjLag != 0 {
			return false
		}
		now := time.Now()
		cjLag = now.Sub(now.Truncate(time.Minute))
		return true
	})
	_ = kb.cs.BatchV1().CronJobs(kb.ns).Delete(ctx, "cj", metav1.DeleteOptions{})
	if err != nil {
		bench.Logf("kube cronjob: %v", err)
	}
	r.Add("kube", "cron fire → pod Running: ours (0/10 s cron) / a CronJob (every minute)", fmt.Sprintf("%s / %s", bench.Secs(oursLag), bench.Secs(cjLag)), "", nil)
}

// cpuUse is the scheduler's CPU seconds over wall seconds in which pods pods ran.
type cpuUse struct {
	cpu, wall float64
	pods      int
}

// cpuPerPod is the scheduler's CPU time (utime+stime) over rounds executions of a job of
// shards shards, each awaited by watching its pods until the scheduler has deleted them.
func (kb *kubeBench) cpuPerPod(ctx context.Context, api *bench.Client, pid, rounds, shards int) (cpuUse, bool) {
	job := fmt.Sprintf("kc%d", shards)
	if err := api.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":%q,"appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":%d,"jobParameter":"1","cpuCount":0.05,"memoryMB":32}`, job, shards)); err != nil {
		bench.Logf("kube cpu: register %s: %v", job, err)
		return cpuUse{}, false
	}
	time.Sleep(time.Second)
	before, err := bench.ReadProc(pid)
	if err != nil {
		return cpuUse{}, false
	}
	pods := 0
	for range rounds {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		w, err := kb.cs.CoreV1().Pods(kb.ns).Watch(cctx, metav1.ListOptions{LabelSelector: "elasticjob.io/job=" + job})
		if err != nil {
			cancel()
			return cpuUse{}, false
		}
		if err := api.Trigger(job); err != nil {
			cancel()
			return cpuUse{}, false
		}
		deleted := 0
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				if deleted++; deleted == shards {
					break
				}
			}
		}
		w.Stop()
		cancel()
		pods += deleted
	}
	after, err := bench.ReadProc(pid)
	if err != nil || pods == 0 {
		return cpuUse{}, false
	}
	return cpuUse{cpu: after.CPU - before.CPU, wall: after.Taken.Sub(before.Taken).Seconds(), pods: pods}, true
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
