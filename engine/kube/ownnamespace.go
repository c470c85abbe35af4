package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/jobs"
)

// checkOwnNamespace refuses a pod of the scheduler's own Kubernetes namespace (the default
// namespace's, with the shipped manifests and chart) that would read the namespace's stored
// objects: a Secret (by an environment variable, envFrom, a secret or projected volume, a
// volume's secretRef, or the job's own kubernetesSecret entries), a PersistentVolumeClaim, or
// a volume that makes or reaches one (ephemeral, csi and every other volume type). There live
// the scheduler's own: its admin password and database passwords (the Secret the manifests
// name elasticjob-scheduler), and its data volume with the registry, the secrets key and the
// history (a ReadWriteOnce claim is mounted by any pod on the same node). Whoever edits a job
// of that namespace could otherwise read them, and so every team's secrets: not even
// kube_pod_template_host_access lets a template do so. ConfigMaps, the downward API and empty
// directories stay allowed. own is the scheduler's account, "namespace/name" ("": unknown,
// the scheduler runs outside the cluster, nothing of it is there to reach).
func checkOwnNamespace(pod *corev1.Pod, job jobs.Config, own string) error {
	ns, _, ok := strings.Cut(own, "/")
	if !ok || ns == "" || pod.Namespace != ns {
		return nil
	}
	bad := func(field, what string) error {
		return fmt.Errorf("%w: %s: %s of Kubernetes namespace %s, the scheduler's own, where its Secrets and its data volume "+
			"(the registry, the secrets key, every team's secrets) are: a task pod there may not read them; run the default "+
			"namespace's pods in a Kubernetes namespace of their own (kube_namespace) to use that namespace's Secrets and volumes",
			ErrPodTemplate, field, what, ns)
	}
	for i, r := range job.Secrets {
		if r.KubernetesSecret != "" {
			return bad(fmt.Sprintf("secrets[%d].kubernetesSecret", i), fmt.Sprintf("Secret %q", r.KubernetesSecret))
		}
	}
	for i, v := range pod.Spec.Volumes {
		field := fmt.Sprintf("podTemplate.spec.volumes[%d] (%q)", i, v.Name)
		switch {
		case v.EmptyDir != nil, v.ConfigMap != nil, v.DownwardAPI != nil, v.Image != nil:
		case v.Projected != nil:
			for j, src := range v.Projected.Sources {
				if src.Secret != nil {
					return bad(fmt.Sprintf("%s.projected.sources[%d].secret", field, j), fmt.Sprintf("Secret %q", src.Secret.Name))
				}
			}
		case v.Secret != nil:
			return bad(field+".secret", fmt.Sprintf("Secret %q", v.Secret.SecretName))
		case v.PersistentVolumeClaim != nil:
			return bad(field+".persistentVolumeClaim", fmt.Sprintf("PersistentVolumeClaim %q", v.PersistentVolumeClaim.ClaimName))
		default:
			return bad(field, "a volume other than emptyDir, configMap, downwardAPI, projected or image: it makes or reads stored objects (claims, their clones, Secrets of a driver)")
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return bad(fmt.Sprintf("podTemplate container %q env %s valueFrom.secretKeyRef", c.Name, e.Name),
						fmt.Sprintf("Secret %q", e.ValueFrom.SecretKeyRef.Name))
				}
			}
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					return bad(fmt.Sprintf("podTemplate container %q envFrom.secretRef", c.Name), fmt.Sprintf("Secret %q", f.SecretRef.Name))
				}
			}
		}
	}
	return nil
}
