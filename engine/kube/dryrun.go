package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// DryRunPod checks the podTemplates of app a and job j (nil: the app's alone) the way a
// launch would use them: it builds the pod a shard would run in, with the templates merged,
// and has the API server validate it with a server-side dry-run create (validation and
// admission: service account, priority class, pod security…), so a bad template is refused
// at registration. Nothing is created. Without any template the API server is not asked: a
// job naming Kubernetes Secrets is built for the scheduler's own checks alone.
// Errors about the templates wrap ErrPodTemplate; others (the API server unreachable) not.
func (e *Engine) DryRunPod(ctx context.Context, a app.Config, j *jobs.Config) error {
	return e.DryRunPodIn(ctx, namespace.Default, a, j)
}

// DryRunPodIn is DryRunPod for an app and a job of scheduler namespace ns: the dry run is
// made in its Kubernetes namespace.
func (e *Engine) DryRunPodIn(ctx context.Context, ns string, a app.Config, j *jobs.Config) error {
	job := jobs.Config{JobName: a.AppName, AppName: a.AppName, JobExecutionType: jobs.Transient, ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 32}
	if j != nil {
		job = *j
	}
	// A job naming Kubernetes Secrets without a template is built too (nothing asked of the
	// API server): where its Secrets may not be read (checkOwnNamespace), it is refused here.
	templated := !a.PodTemplate.Empty() || !job.PodTemplate.Empty()
	if !templated && len(job.KubeSecrets()) == 0 {
		return nil
	}
	id := "dry-run-" + randomHex(6)
	td := jobs.TaskData{Version: jobs.TaskDataVersion, Job: job, App: a,
		ShardingContext: jobs.ShardingContext{JobName: job.JobName, TaskID: id, ShardingTotalCount: job.ShardingTotalCount}}
	l := engine.TaskLaunch{TaskID: id, CPUs: job.CPUCount, MemMB: job.MemoryMB, Task: td,
		Executor: engine.ExecutorSpec{ID: id, CPUs: a.CPUCount, MemMB: a.MemoryMB}}
	// No node: the pod is not placed; and no real report token in a request that may be
	// echoed back in an error.
	kns, err := e.ns.kubeNamespace(ns)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPodTemplate, err)
	}
	p, err := e.pods.build(podSpec{launch: l, shareCPUs: a.CPUCount, shareMem: a.MemoryMB, token: "dry-run", ns: kns, dns: e.pods.dnsPolicy("")})
	if err != nil || !templated {
		return err
	}
	_, err = e.cfg.Client.CoreV1().Pods(kns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case errors.As(err, &status) && status.Status().Code >= 400 && status.Status().Code < 500 &&
		!apierrors.IsTooManyRequests(err) && !apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: the Kubernetes API server refused the pod it would make (dry run in namespace %s): %s",
			ErrPodTemplate, kns, oneLine(status.Status().Message))
	default:
		return fmt.Errorf("kube: dry-run create of a pod: %w", err)
	}
}
