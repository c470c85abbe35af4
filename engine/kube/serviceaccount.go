package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// checkAccount refuses a pod that would run as the scheduler's own service account. Its
// token (mounted by automountServiceAccountToken, or by a projected serviceAccountToken
// volume, which no automount setting stops) carries the scheduler's rights: pods created,
// deleted and read, logs read, in every team's Kubernetes namespace. Whoever edits a job
// whose pods run in the scheduler's own Kubernetes namespace (the default namespace's, with
// the shipped manifests and chart) could otherwise take them: not even
// kube_pod_template_host_access lets a template do so.
func (e *podMaker) checkAccount(pod *corev1.Pod, t *corev1.PodTemplateSpec) error {
	own := e.cfg.SchedulerAccount
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if own == "" || pod.Namespace+"/"+sa != own {
		return nil
	}
	bad := func(field string) error {
		return fmt.Errorf("%w: %s: %s is the scheduler's own service account; a task pod holding its token would have the scheduler's rights over every team's pods",
			ErrPodTemplate, field, own)
	}
	if t != nil && t.Spec.ServiceAccountName != "" {
		return bad("podTemplate.spec.serviceAccountName")
	}
	// The account is the pod's by kube_service_account or by the namespace's default
	// (a scheduler run as its namespace's default account): the pod runs, without its
	// token.
	if m := pod.Spec.AutomountServiceAccountToken; m == nil || *m {
		return bad("podTemplate.spec.automountServiceAccountToken")
	}
	for i, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return bad(fmt.Sprintf("podTemplate.spec.volumes[%d] (%q).projected.serviceAccountToken", i, v.Name))
			}
		}
	}
	return nil
}
