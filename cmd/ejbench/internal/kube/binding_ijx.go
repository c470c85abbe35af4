package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/engine/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The binding part's "ijx" side: an Indexed Job whose pods are OUR pods: the spec of one
// pod of the `direct` job of the same size (our executor image running `executor pod`,
// its env with the task data, requests = limits as ours, host network, DNS policy, grace),
// copied from a warm-up trigger of that job and used as the Job's template. If it starts
// as fast as the Indexed Jobs, the gap is the scheduler's orchestration; if as slow as
// ours, it is the executor in the pod. What differs from our pods, on purpose:
//   - the Job controller creates the pods and kube-scheduler binds them (ours: nodeName);
//   - labels and annotations are the Job's (ours name app, job, shard and task);
//   - every pod carries the same task data (one shard's: the work is the same for each);
//   - the executor reports to a bench server that takes every report (200), not to the
//     scheduler, so nothing of the scheduler runs while the pods start.
//
// The "ijs" side is the same Job of our pods with the executor swapped for busybox doing its
// work (command: the ijw side's fetchRun): if it is as fast as ijw, our pod spec (env,
// DNS policy, no service account token, grace) costs nothing and the executor binary does.

// ijxSides returns the ijx and ijs sides and the report server (closed by the caller).
func (kb *kubeBench) ijxSides(api *bench.Client, job func(n int) string, fetchRun string) ([]bench.Side, *httptest.Server) {
	var reports atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/executor/v1/report" {
			reports.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	templates := map[int]corev1.PodSpec{}
	s := bench.Side{Name: "ijx"}
	s.Warm = func(ctx context.Context, n int) error {
		p, err := kb.capturePod(ctx, api, job(n), n)
		if err != nil {
			return fmt.Errorf("ijx: copy a pod of %s: %w", job(n), err)
		}
		templates[n] = ourPodAsTemplate(p, srv.URL)
		c := templates[n].Containers[0]
		bench.Logf("kube binding ijx %d: the template of %s: %s %v, requests %v limits %v", n, p.Name, c.Image, c.Command, c.Resources.Requests, c.Resources.Limits)
		return nil
	}
	s.Run = func(ctx context.Context, label string, n int) (time.Duration, error) {
		spec, ok := templates[n]
		if !ok {
			return 0, fmt.Errorf("ijx: no template for %d pods", n)
		}
		before := reports.Load()
		kb.template = &spec
		defer func() { kb.template = nil }()
		run, _, err := kb.indexedJobOf(ctx, label, n)
		if err == nil && reports.Load()-before < int64(2*n) { // each pod: Running and its end
			err = fmt.Errorf("ijx: %d reports from %d pods, want %d", reports.Load()-before, n, 2*n)
		}
		return run, err
	}
	ijs := bench.Side{Name: "ijs", Run: func(ctx context.Context, label string, n int) (time.Duration, error) {
		spec, ok := templates[n]
		if !ok {
			return 0, fmt.Errorf("ijs: no template for %d pods", n)
		}
		spec = *spec.DeepCopy()
		spec.Containers[0].Command = []string{"sh", "-c", fetchRun}
		kb.template = &spec
		defer func() { kb.template = nil }()
		run, _, err := kb.indexedJobOf(ctx, label, n)
		return run, err
	}}
	return []bench.Side{s, ijs}, srv
}

// capturePod triggers job (n shards) once, untimed, and returns the first of its pods the
// watch saw.
func (kb *kubeBench) capturePod(ctx context.Context, api *bench.Client, job string, n int) (*corev1.Pod, error) {
	var got *corev1.Pod
	kb.seen = func(p *corev1.Pod, _ watch.EventType, _ time.Duration) {
		if got == nil {
			got = p.DeepCopy()
		}
	}
	defer func() { kb.seen = nil }()
	if _, _, err := kb.ourRound(ctx, api, job, n, endedRows(api, job)+n); err != nil {
		return nil, err
	}
	if got == nil {
		return nil, fmt.Errorf("no pod seen")
	}
	return got, nil
}

// ourPodAsTemplate is our pod's spec for a Job's template: not bound (nodeName, and the
// scheduler name and priority the API server filled in, dropped), its reports sent to
// reportURL.
func ourPodAsTemplate(p *corev1.Pod, reportURL string) corev1.PodSpec {
	spec := *p.Spec.DeepCopy()
	spec.NodeName, spec.SchedulerName, spec.Priority, spec.PreemptionPolicy = "", "", nil, nil
	for i := range spec.Containers {
		for j, e := range spec.Containers[i].Env {
			if e.Name == kube.EnvReportURLs {
				spec.Containers[i].Env[j].Value = strings.TrimRight(reportURL, "/")
			}
		}
	}
	return spec
}
