package kube

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/jobs"
)

// A job's secrets may name Kubernetes Secrets of its namespace's Kubernetes namespace
// (jobs.SecretRef.KubernetesSecret). The pod gets them by reference, never the scheduler:
// an env entry is a secretKeyRef variable of the task container (the executor's process
// passes it on to the job's); a file entry is a key of a secret volume mounted read-only
// under jobs.KubeSecretsMount, which the executor copies into the task's secrets directory.

// kubeSecretVolume prefixes the volumes of the Secrets a job's file entries name.
const kubeSecretVolume = "ej-kube-secret-"

// addKubeSecrets adds the job's Kubernetes Secret entries to the pod's task container.
func addKubeSecrets(pod *corev1.Pod, job jobs.Config) {
	refs := job.KubeSecrets()
	if len(refs) == 0 {
		return
	}
	c := &pod.Spec.Containers[0]
	keys := map[string]map[string]bool{} // secret → keys mounted
	for _, r := range refs {
		if r.Env != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: r.Env, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.KubernetesSecret}, Key: r.Key}}})
			continue
		}
		if keys[r.KubernetesSecret] == nil {
			keys[r.KubernetesSecret] = map[string]bool{}
		}
		keys[r.KubernetesSecret][r.Key] = true
	}
	secrets := make([]string, 0, len(keys))
	for s := range keys {
		secrets = append(secrets, s)
	}
	sort.Strings(secrets)
	mode := int32(0o444) // the task's user (any, with runAsUser) reads it; the copy it gets is 0400
	for i, s := range secrets {
		name := fmt.Sprintf("%s%d", kubeSecretVolume, i)
		var items []corev1.KeyToPath
		for _, k := range sortedKeys(keys[s]) {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: s, Items: items, DefaultMode: &mode}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: jobs.KubeSecretsMount + "/" + s, ReadOnly: true})
	}
}
