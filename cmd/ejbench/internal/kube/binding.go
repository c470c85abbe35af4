package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kube scenario's binding part: trigger → all pods Running for jobs of
// 3 and 20 shards (-kube-binding-shards), with the scheduler binding pods itself (direct:
// spec.nodeName) and through kube-scheduler (pinned by required node affinity), side by side
// with an Indexed Job of the same pods (same command, requests = limits as ours), the same
// pods by hand at once, an Indexed Job of pods doing our executor's work, and an Indexed Job
// of our own pods (ijx, binding_ijx.go), all on the same cluster in the same run.
// Each round runs every side once, in an order turned by one each round, both schedulers
// up throughout: a node that slows over the run (it did: run one side after the other, the
// 20-pod figures grew in run order, 9.0 → 10.8 → 11.5 → 12.8 → 12.9 s) charges every side
// alike. Each figure is the median of kubeRounds rounds.

// shardRes is one of our pods' resources for a job of n shards: the shard's 0.05 CPU and
// 32 MB plus its share of the app b's executor (0.03 CPU, 64 MB), rounded up.
func shardRes(n int) corev1.ResourceList {
	milli := (50*n + 30 + n - 1) / n
	mib := (32*n + 64 + n - 1) / n
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(milli), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(mib)<<20, resource.BinarySI)}
}

func (kb *kubeBench) bindingModes(ctx context.Context, o options, r *bench.Report, kubeconfig, tmp string) error {
	// The Indexed Job's pods again, doing what our executor does before and around the
	// shard: fetch the app over HTTP, unpack it and run its script (busybox wget and tar),
	// without reporting to anyone.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(benchApp()) }))
	defer srv.Close()
	fetchRun := fmt.Sprintf("cd /tmp && mkdir -p app$$ && cd app$$ && wget -q -O app.tgz %s/b.tgz && tar xzf app.tgz && ELASTICJOB_JOB_PARAMETER=1 sh bin/run.sh", srv.URL)
	defer func() { kb.limits, kb.command = nil, "" }()
	sides := []bench.Side{
		{Name: "ijw", Run: func(ctx context.Context, label string, n int) (time.Duration, error) {
			kb.command = fetchRun
			defer func() { kb.command = "" }()
			run, _, err := kb.indexedJobOf(ctx, label, n)
			return run, err
		}},
		{Name: "ij", Run: func(ctx context.Context, label string, n int) (time.Duration, error) {
			run, _, err := kb.indexedJobOf(ctx, label, n)
			return run, err
		}},
		{Name: "hand", Run: func(ctx context.Context, label string, n int) (time.Duration, error) {
			run, _, err := kb.handPodsOf(ctx, label, n)
			return run, err
		}},
	}
	// Both binding modes' schedulers run throughout (the one not triggered idles), each
	// with its jobs registered.
	modes := []string{"direct", "kube-scheduler"}
	var withModes func(i int) error
	withModes = func(i int) error {
		if i == len(modes) {
			kb.bindingRounds(ctx, r, sides, o.kubeBindN)
			return nil
		}
		m := modes[i]
		return kb.withScheduler(o, kubeconfig, tmp, "sched-"+m, []string{"--kube-binding", m}, func(api *bench.Client, _ *bench.Scheduler) error {
			for _, n := range o.kubeBindN {
				job := fmt.Sprintf("kb%s%d", m[:1], n)
				if err := api.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":%q,"appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":%d,"jobParameter":"1","cpuCount":0.05,"memoryMB":32}`, job, n)); err != nil {
					return err
				}
			}
			sides = append(sides, bench.Side{Name: m, Run: func(ctx context.Context, _ string, n int) (time.Duration, error) {
				job := fmt.Sprintf("kb%s%d", m[:1], n)
				run, _, err := kb.ourRound(ctx, api, job, n, endedRows(api, job)+n)
				return run, err
			}})
			if m == "direct" { // an Indexed Job of our pods, copied from this mode's (binding_ijx.go)
				ijx, srv := kb.ijxSides(api, func(n int) string { return fmt.Sprintf("kbd%d", n) }, fetchRun)
				defer srv.Close()
				sides = append(sides, ijx...)
			}
			return withModes(i + 1)
		})
	}
	if err := withModes(0); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	return nil
}

// bindingRounds runs kubeRounds rounds of every side for each size, the sides of a round in
// an order turned by one each round, and reports the medians.
func (kb *kubeBench) bindingRounds(ctx context.Context, r *bench.Report, sides []bench.Side, sizes []int) {
	for _, n := range sizes {
		runs := map[string][]time.Duration{}
		kb.limits = shardRes(n)
		for _, s := range sides {
			if s.Warm != nil {
				if err := s.Warm(ctx, n); err != nil {
					bench.Logf("kube binding %s %d: %v", s.Name, n, err)
				}
			}
		}
		for i := range kubeRounds {
			for j := range sides {
				s := sides[(i+j)%len(sides)]
				// The CPU by part to the last Running (cpu.go), for every side alike.
				tl := newTimeline(n, 0)
				kb.seen = tl.see
				run, err := s.Run(ctx, fmt.Sprintf("%s%d-%d", s.Name, n, i), n)
				kb.seen = nil
				if err != nil {
					bench.Logf("kube binding %s %d round %d: %v", s.Name, n, i, err)
					continue
				}
				runs[s.Name] = append(runs[s.Name], run)
				tl.mu.Lock()
				bench.Logf("kube binding %s %d round %d: all Running %s; CPU seconds to it: %s", s.Name, n, i, bench.Secs(run), tl.cpu)
				tl.mu.Unlock()
			}
			bench.Logf("kube binding %d shards round %d: %s", n, i, roundLine(sides, runs))
		}
		kb.limits = nil
		m := func(name string) time.Duration { return median(runs[name]) }
		ij := m("ij")
		r.Add("kube", fmt.Sprintf("binding: an Indexed Job of %d pods fetching, unpacking and running the app as our executor does: all Running (median of %d)", n, kubeRounds),
			bench.Secs(m("ijw")), "", nil)
		r.Add("kube", fmt.Sprintf("binding: an Indexed Job of %d of our pods (our executor image, env and resources; reports to a bench server): all Running (median of %d)", n, kubeRounds),
			bench.Secs(m("ijx")), "", nil)
		r.Add("kube", fmt.Sprintf("binding: that Indexed Job of our pods with busybox doing the executor's work instead: all Running (median of %d)", kubeRounds),
			bench.Secs(m("ijs")), "", nil)
		r.Add("kube", fmt.Sprintf("binding: the same %d pods bound by hand at once / as an Indexed Job: all Running (median of %d)", n, kubeRounds),
			fmt.Sprintf("%s / %s", bench.Secs(m("hand")), bench.Secs(ij)), "the kubelet's floor", nil)
		for _, mode := range []struct{ name, goal string }{{"direct", "≤ the Indexed Job's"}, {"kube-scheduler", "≤ 1.1× the Indexed Job's"}} {
			run := m(mode.name)
			var met *bool
			if run > 0 && ij > 0 {
				limit := ij
				if mode.name == "kube-scheduler" {
					limit = ij * 11 / 10
				}
				met = new(run <= limit)
			}
			r.Add("kube", fmt.Sprintf("binding %s, trigger → %d pods Running / an Indexed Job of the same %d pods (median of %d, rounds interleaved)", mode.name, n, n, kubeRounds),
				fmt.Sprintf("%s / %s (%.2f×)", bench.Secs(run), bench.Secs(ij), run.Seconds()/max(ij.Seconds(), 1e-9)), mode.goal, met)
		}
	}
}

// roundLine is each side's figures so far, in the sides' order.
func roundLine(sides []bench.Side, runs map[string][]time.Duration) string {
	var b strings.Builder
	for _, s := range sides {
		fmt.Fprintf(&b, " %s", s.Name)
		for _, d := range runs[s.Name] {
			fmt.Fprintf(&b, " %.2f", d.Seconds())
		}
		b.WriteString(";")
	}
	return strings.TrimSpace(b.String())
}

// indexedJobOf runs an Indexed Job of n completions, n at once, with kb.limits (or of
// kb.template's pods, when set); it returns when all n pods were Running and when all had
// Succeeded.
func (kb *kubeBench) indexedJobOf(ctx context.Context, label string, n int) (time.Duration, time.Duration, error) {
	defer func() {
		bg := metav1.DeletePropagationBackground
		_ = kb.cs.BatchV1().Jobs(kb.ns).Delete(ctx, label, metav1.DeleteOptions{PropagationPolicy: &bg})
		kb.clean(ctx, "run="+label)
	}()
	count, mode := int32(n), batchv1.IndexedCompletion
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true, Containers: []corev1.Container{kb.container()}}
	if kb.template != nil {
		spec = *kb.template
	}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: label}, Spec: batchv1.JobSpec{
		Completions: &count, Parallelism: &count, CompletionMode: &mode,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"run": label}}, Spec: spec},
	}}
	return kb.watchPods(ctx, "run="+label, n, func() error {
		_, err := kb.cs.BatchV1().Jobs(kb.ns).Create(ctx, j, metav1.CreateOptions{})
		return err
	}, succeeded)
}
