package kwokcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/internal/kwoksim"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The simulated run of a pod. Its job's parameter says how long it runs and how it ends:
// "run=3s exit=0". kwok reads it from the task data in the pod's environment
// (ELASTICJOB_TASK_DATA: the scheduler's pods carry it; kube-scale's Indexed Jobs give their
// pods the same), so one Stage serves both. Without the parameter a pod runs 1 s.
const (
	runExpr = `[(.spec.containers[0].env // [])[] | select(.name == "ELASTICJOB_TASK_DATA") | .value | fromjson | .job.jobParameter | capture("run=(?<d>[0-9.]+[a-z]+)").d][0]`
	// exitTmpl sets $exit from the same parameter (sprig's fromJson and regexFind).
	exitTmpl = `{{ $exit := "0" }}{{ range (index .spec.containers 0).env }}{{ if eq .name "ELASTICJOB_TASK_DATA" }}{{ with regexFind "exit=[0-9]+" (toString (fromJson .value).job.jobParameter) }}{{ $exit = trimPrefix "exit=" . }}{{ end }}{{ end }}{{ end }}`
)

// Config is kwok's configuration: the options and the Stages of nodes and pods.
//   - node-initialize: a new node becomes Ready with the allocatable it was created with;
//   - pod-running: a pod bound to a kwok node runs at once (no image, no sandbox);
//   - pod-end: it ends after its job's run time with its job's exit code (Succeeded, or
//     Failed with the container terminated with that code, as a kubelet reports it);
//   - pod-delete: a deleted pod goes at once (the kubelet's confirmation).
//
// Node leases are renewed every 15 min, and kube-controller-manager runs without the node
// lifecycle controller: the 1,000 heartbeats a real cluster sends would be load neither side
// makes.
func Config(parallelism int) string {
	return kwoksim.Stages(fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeLeaseDurationSeconds: 3600
  nodeLeaseParallelism: 4
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  podsOnNodeSyncParallelism: 4
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`, parallelism), kwoksim.NodeInitialize, kwoksim.PodRunning,
		fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-end}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
  delay:
    durationMilliseconds: 1000
    durationFrom: {expressionFrom: '%s'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      %s
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $exit }}
            finishedAt: {{ $now | Quote }}
            reason: {{ if eq $exit "0" }}Completed{{ else }}Error{{ end }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: {{ if eq $exit "0" }}Succeeded{{ else }}Failed{{ end }}
`, runExpr, exitTmpl), kwoksim.PodDelete)
}

// StartKwok starts kwok on the nodes annotated kwoksim.NodeAnnotation=fake.
func StartKwok(dir, bin, kubeconfig string, parallelism int) (*Proc, error) {
	cfg := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(cfg, []byte(Config(parallelism)), 0o644); err != nil {
		return nil, err
	}
	return startProc(dir, "kwok", bin, "--kubeconfig", kubeconfig, "--config", cfg,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", kwoksim.NodeAnnotation+"=fake",
		"--node-ip", "127.0.0.1")
}

// untaint removes the node.kubernetes.io/not-ready taint the API server puts on a new node
// (the node lifecycle controller would, once the node is Ready; it does not run here).
func untaint(ctx context.Context, cs kubernetes.Interface, nodes []corev1.Node) error {
	for _, nd := range nodes {
		if len(nd.Spec.Taints) == 0 {
			continue
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, nd.Name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("untaint %s: %w", nd.Name, err)
		}
	}
	return nil
}

// CreateNodes creates n kwok nodes of cpus and memGiB each (prefix0000, prefix0001, …: a
// prefix per cluster keeps node names apart across the clusters of one scheduler) and waits
// until every one is Ready.
func CreateNodes(ctx context.Context, cs kubernetes.Interface, kwok *Proc, prefix string, n, cpus, memGiB int, wait time.Duration) error {
	var next, failed atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				res := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(memGiB)<<30, resource.BinarySI),
					corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI)}
				node := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%04d", prefix, i),
						Annotations: map[string]string{kwoksim.NodeAnnotation: "fake"},
						Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("%s%04d", prefix, i)}},
					Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
				}
				if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					failed.Add(1)
					first.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d nodes not created: %v", f, first.Load())
	}
	deadline := time.Now().Add(wait)
	for {
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok", ResourceVersion: "0"})
		ready := 0
		if err == nil {
			for _, nd := range l.Items {
				for _, c := range nd.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready >= n {
			return untaint(ctx, cs, l.Items)
		}
		if !kwok.Alive() {
			return fmt.Errorf("kwok exited (%d of %d nodes Ready)", ready, n)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d kwok nodes Ready after %s", ready, n, wait)
		}
		time.Sleep(time.Second)
	}
}
