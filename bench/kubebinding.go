package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kube scenario's binding part (issue 41 item 2): trigger → all pods Running for jobs of
// 3 and 20 shards, with the scheduler binding pods itself (direct: spec.nodeName) and through
// kube-scheduler (pinned by required node affinity), side by side with an Indexed Job of the
// same pods (same command, requests = limits as ours) created on the same cluster in the same
// run. Each figure is the median of kubeRounds rounds.

var bindingShards = []int{3, 20}

// shardRes is one of our pods' resources for a job of n shards: the shard's 0.05 CPU and
// 32 MB plus its share of the app b's executor (0.03 CPU, 64 MB), rounded up.
func shardRes(n int) corev1.ResourceList {
	milli := (50*n + 30 + n - 1) / n
	mib := (32*n + 64 + n - 1) / n
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(milli), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(mib)<<20, resource.BinarySI)}
}

func (kb *kubeBench) bindingModes(ctx context.Context, o options, r *report, kubeconfig, tmp string) error {
	// The Indexed Job's pods again, doing what our executor does before and around the
	// shard: fetch the app over HTTP, unpack it and run its script (busybox wget and tar),
	// without reporting to anyone.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(benchApp()) }))
	defer srv.Close()
	fetchRun := fmt.Sprintf("cd /tmp && mkdir -p app$$ && cd app$$ && wget -q -O app.tgz %s/b.tgz && tar xzf app.tgz && ELASTICJOB_JOB_PARAMETER=1 sh bin/run.sh", srv.URL)
	jobRun := map[int]time.Duration{}
	for _, n := range bindingShards {
		kb.limits, kb.command = shardRes(n), fetchRun
		work, _ := kb.rounds(ctx, fmt.Sprintf("ijw%d", n), func(ctx context.Context, label string) (time.Duration, time.Duration, error) {
			return kb.indexedJobOf(ctx, label, n)
		})
		kb.limits, kb.command = nil, ""
		r.add("kube", fmt.Sprintf("binding: an Indexed Job of %d pods fetching, unpacking and running the app as our executor does: all Running (median of %d)", n, kubeRounds),
			secs(work), "", nil)
	}
	for _, n := range bindingShards {
		kb.limits = shardRes(n)
		jobRun[n], _ = kb.rounds(ctx, fmt.Sprintf("ij%d", n), func(ctx context.Context, label string) (time.Duration, time.Duration, error) {
			return kb.indexedJobOf(ctx, label, n)
		})
		hand, _ := kb.rounds(ctx, fmt.Sprintf("hand%d", n), func(ctx context.Context, label string) (time.Duration, time.Duration, error) {
			return kb.handPodsOf(ctx, label, n)
		})
		kb.limits = nil
		r.add("kube", fmt.Sprintf("binding: the same %d pods bound by hand at once / as an Indexed Job: all Running (median of %d)", n, kubeRounds),
			fmt.Sprintf("%s / %s", secs(hand), secs(jobRun[n])), "the kubelet's floor", nil)
	}
	modes := []struct{ name, goal string }{{"direct", "≤ the Indexed Job's"}, {"kube-scheduler", "≤ 1.1× the Indexed Job's"}}
	for _, m := range modes {
		err := kb.withScheduler(o, kubeconfig, tmp, "sched-"+m.name, []string{"--kube-binding", m.name}, func(api *client, _ *schedProc) error {
			for _, n := range bindingShards {
				job := fmt.Sprintf("kb%d", n)
				if err := api.postJSON("/api/job/register", fmt.Sprintf(`{"jobName":%q,"appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":%d,"jobParameter":"1","cpuCount":0.05,"memoryMB":32}`, job, n)); err != nil {
					return err
				}
				var runs, made []time.Duration
				for i := range kubeRounds {
					run, _, err := kb.ourRound(ctx, api, job, n, endedRows(api, job)+n)
					if err != nil {
						logf("kube binding %s %d shards round %d: %v", m.name, n, i, err)
						continue
					}
					runs, made = append(runs, run), append(made, kb.created)
				}
				run, ij := median(runs), jobRun[n]
				var met *bool
				if run > 0 && ij > 0 {
					limit := ij
					if m.name == "kube-scheduler" {
						limit = ij * 11 / 10
					}
					met = new(run <= limit)
				}
				r.add("kube", fmt.Sprintf("binding %s, trigger → %d pods Running / an Indexed Job of the same %d pods (median of %d; ours created in)", m.name, n, n, kubeRounds),
					fmt.Sprintf("%s / %s (%s)", secs(run), secs(ij), secs(median(made))), m.goal, met)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("binding %s: %w", m.name, err)
		}
	}
	return nil
}

// indexedJobOf runs an Indexed Job of n completions, n at once, with kb.limits; it returns
// when all n pods were Running and when all had Succeeded.
func (kb *kubeBench) indexedJobOf(ctx context.Context, label string, n int) (time.Duration, time.Duration, error) {
	defer func() {
		bg := metav1.DeletePropagationBackground
		_ = kb.cs.BatchV1().Jobs(kb.ns).Delete(ctx, label, metav1.DeleteOptions{PropagationPolicy: &bg})
		kb.clean(ctx, "run="+label)
	}()
	count, mode := int32(n), batchv1.IndexedCompletion
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: label}, Spec: batchv1.JobSpec{
		Completions: &count, Parallelism: &count, CompletionMode: &mode,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"run": label}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true, Containers: []corev1.Container{kb.container()}}},
	}}
	return kb.watchPods(ctx, "run="+label, n, func() error {
		_, err := kb.cs.BatchV1().Jobs(kb.ns).Create(ctx, j, metav1.CreateOptions{})
		return err
	}, succeeded)
}
