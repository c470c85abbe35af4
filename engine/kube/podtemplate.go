package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/ejcloud/elasticjob/app"
)

// ErrPodTemplate is wrapped by every error about an app's or a job's podTemplate.
var ErrPodTemplate = errors.New("bad podTemplate")

// MergePodTemplates reads the app's and the job's podTemplate (Kubernetes PodTemplateSpecs,
// unknown fields refused) and applies the job's over the app's as a strategic merge patch,
// as kubectl patch does: maps merge, containers, env and volumes merge by name, volume
// mounts by mount path, other lists (tolerations, envFrom) are replaced. nil when neither
// has one.
func MergePodTemplates(appT, jobT app.PodTemplate) (*corev1.PodTemplateSpec, error) {
	a, err := parseTemplate("the app's", appT)
	if err != nil {
		return nil, err
	}
	j, err := parseTemplate("the job's", jobT)
	if err != nil {
		return nil, err
	}
	switch {
	case a == nil && j == nil:
		return nil, nil
	case j == nil:
		return a, nil
	case a == nil:
		return j, nil
	}
	merged, err := strategicpatch.StrategicMergePatch(appT, jobT, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("%w: the job's podTemplate cannot be merged over the app's: %v", ErrPodTemplate, err)
	}
	out := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("%w: merged podTemplate: %v", ErrPodTemplate, err)
	}
	return out, nil
}

func parseTemplate(whose string, t app.PodTemplate) (*corev1.PodTemplateSpec, error) {
	if t.Empty() {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	out := &corev1.PodTemplateSpec{}
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("%w: %s podTemplate is not a Kubernetes PodTemplateSpec: %v", ErrPodTemplate, whose, err)
	}
	return out, nil
}

// Pod spec fields the scheduler sets itself: a template that sets one conflicts.
var ownedSpec = map[string]string{
	"nodeName":                      "the scheduler places the pod",
	"restartPolicy":                 "a shard's pod never restarts (the scheduler retries)",
	"activeDeadlineSeconds":         "set from the job's timeoutSeconds",
	"terminationGracePeriodSeconds": "set from the scheduler's kill grace",
	"hostNetwork":                   "set by kube_host_network",
	"initContainers":                "the scheduler's init container installs the executor",
	"ephemeralContainers":           "not part of a pod's creation",
	"overhead":                      "the scheduler accounts the pod's resources",
	"resources":                     "the scheduler sets the pod's resources from cpuCount and memoryMB",
	"resourceClaims":                "the scheduler accounts the pod's resources",
	"schedulingGates":               "a gated pod cannot be bound to the node the scheduler chose",
	"schedulerName":                 "the scheduler places the pod",
}

// Fields of the task container a template may set; the others are the scheduler's.
var mergedContainer = map[string]bool{"name": true, "env": true, "envFrom": true, "volumeMounts": true, "volumeDevices": true, "securityContext": true}

// secretName is an env name whose literal value would be a secret readable in the API.
var secretName = regexp.MustCompile(`(?i)(passw|secret|token|credential|api_?key|private_?key|access_?key)`)

// ApplyPodTemplate merges t into pod, the pod the scheduler built: the template's pod
// settings are kept, the scheduler's own fields (ownedSpec, the task container's image,
// command and resources, its env, its sandbox volume, its labels and annotations) override
// nothing silently: a template that sets one is an error naming the field. Labels,
// annotations, the node selector, tolerations, volumes, env and mounts are merged.
func ApplyPodTemplate(pod *corev1.Pod, t *corev1.PodTemplateSpec) error {
	if t == nil {
		return nil
	}
	if err := checkTemplate(pod, t); err != nil {
		return err
	}
	base := pod.Spec
	spec := *t.Spec.DeepCopy()
	spec.NodeName, spec.RestartPolicy, spec.HostNetwork = base.NodeName, base.RestartPolicy, base.HostNetwork
	spec.ActiveDeadlineSeconds, spec.TerminationGracePeriodSeconds = base.ActiveDeadlineSeconds, base.TerminationGracePeriodSeconds
	spec.InitContainers = base.InitContainers
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = base.ServiceAccountName
	}
	if spec.AutomountServiceAccountToken == nil {
		spec.AutomountServiceAccountToken = base.AutomountServiceAccountToken
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = base.DNSPolicy
	}
	spec.SecurityContext = overlay(base.SecurityContext, spec.SecurityContext) // field by field (security.go)
	if len(base.NodeSelector) > 0 {
		sel := map[string]string{}
		for k, v := range spec.NodeSelector {
			sel[k] = v
		}
		for k, v := range base.NodeSelector {
			sel[k] = v
		}
		spec.NodeSelector = sel
	}
	spec.Tolerations = append(append([]corev1.Toleration{}, base.Tolerations...), spec.Tolerations...)
	spec.Volumes = append(append([]corev1.Volume{}, base.Volumes...), spec.Volumes...)
	c := base.Containers[0]
	if tc := taskContainer(t); tc != nil {
		c.Env = append(append([]corev1.EnvVar{}, c.Env...), tc.Env...)
		c.EnvFrom = tc.EnvFrom
		c.VolumeMounts = append(append([]corev1.VolumeMount{}, c.VolumeMounts...), tc.VolumeMounts...)
		c.VolumeDevices, c.SecurityContext = tc.VolumeDevices, overlay(c.SecurityContext, tc.SecurityContext)
	}
	spec.Containers = []corev1.Container{c}
	pod.Spec = spec
	pod.Labels = mergeMeta(t.Labels, pod.Labels)
	pod.Annotations = mergeMeta(t.Annotations, pod.Annotations)
	return nil
}

func mergeMeta(template, owned map[string]string) map[string]string {
	out := make(map[string]string, len(template)+len(owned))
	for k, v := range template {
		out[k] = v
	}
	for k, v := range owned {
		out[k] = v
	}
	return out
}

func taskContainer(t *corev1.PodTemplateSpec) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == containerName {
			return &t.Spec.Containers[i]
		}
	}
	return nil
}

// checkTemplate names the first field of t that conflicts with what the scheduler owns in
// pod, or that the merge does not support.
func checkTemplate(pod *corev1.Pod, t *corev1.PodTemplateSpec) error {
	bad := func(field, why string) error {
		return fmt.Errorf("%w: podTemplate.%s: %s", ErrPodTemplate, field, why)
	}
	meta, _ := fieldsOf(t.ObjectMeta)
	for _, k := range meta {
		if k != "labels" && k != "annotations" {
			return bad("metadata."+k, "set by the scheduler (only labels and annotations are merged)")
		}
	}
	for _, kv := range []struct {
		what      string
		template  map[string]string
		scheduler map[string]string
	}{{"labels", t.Labels, pod.Labels}, {"annotations", t.Annotations, pod.Annotations}} {
		for _, k := range sortedKeys(kv.template) {
			if _, ok := kv.scheduler[k]; ok || strings.HasPrefix(k, "elasticjob.io/") {
				return bad(fmt.Sprintf("metadata.%s[%q]", kv.what, k), "set by the scheduler, which relies on it")
			}
		}
	}
	spec, _ := fieldsOf(t.Spec)
	for _, k := range spec {
		why, owned := ownedSpec[k]
		if k == "restartPolicy" && t.Spec.RestartPolicy == corev1.RestartPolicyNever {
			owned = false
		}
		if k == "hostNetwork" && t.Spec.HostNetwork == pod.Spec.HostNetwork {
			owned = false
		}
		if owned {
			return bad("spec."+k, "set by the scheduler ("+why+")")
		}
	}
	for _, k := range sortedKeys(t.Spec.NodeSelector) {
		if v, ok := pod.Spec.NodeSelector[k]; ok && v != t.Spec.NodeSelector[k] {
			return bad(fmt.Sprintf("spec.nodeSelector[%q]", k), fmt.Sprintf("the scheduler's kube_node_selector sets it to %q", v))
		}
	}
	for i, v := range t.Spec.Volumes {
		for _, b := range pod.Spec.Volumes {
			if v.Name == b.Name {
				return bad(fmt.Sprintf("spec.volumes[%d] (%q)", i, v.Name), "the scheduler's volume of that name holds the executor")
			}
		}
		if v.Name == sandboxVolume || v.Name == tmpVolume {
			return bad(fmt.Sprintf("spec.volumes[%d] (%q)", i, v.Name), "the name is reserved for the executor's sandbox and /tmp")
		}
	}
	for i, c := range t.Spec.Containers {
		if c.Name != containerName {
			return bad(fmt.Sprintf("spec.containers[%d] (%q)", i, c.Name),
				`only the container named "task" is merged into the task's container; other containers are not supported`)
		}
		if err := checkContainer(&pod.Spec.Containers[0], &c, bad); err != nil {
			return err
		}
	}
	return nil
}

func checkContainer(base, c *corev1.Container, bad func(field, why string) error) error {
	fields, _ := fieldsOf(*c)
	for _, k := range fields {
		if !mergedContainer[k] {
			return bad("spec.containers[task]."+k, "set by the scheduler (only env, envFrom, volumeMounts, volumeDevices and securityContext are merged)")
		}
	}
	for _, e := range c.Env {
		field := fmt.Sprintf("spec.containers[task].env[%q]", e.Name)
		if strings.HasPrefix(e.Name, "ELASTICJOB_") {
			return bad(field, "the executor's variables (ELASTICJOB_*) are set by the scheduler")
		}
		for _, b := range base.Env {
			if b.Name == e.Name {
				return bad(field, "set by the scheduler (kube_executor_env)")
			}
		}
		if e.Value != "" && secretName.MatchString(e.Name) {
			return bad(field, "a literal value for a secret would be readable in the API; put it in a Secret and use valueFrom.secretKeyRef")
		}
	}
	for i, m := range c.VolumeMounts {
		if m.Name == sandboxVolume || m.MountPath == sandboxPath || strings.HasPrefix(m.MountPath, sandboxPath+"/") {
			return bad(fmt.Sprintf("spec.containers[task].volumeMounts[%d] (%q)", i, m.MountPath), "the executor's sandbox "+sandboxPath+" is the scheduler's")
		}
	}
	return nil
}

// fieldsOf lists the JSON fields v sets, sorted.
func fieldsOf(v any) ([]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for k, raw := range m {
		if s := string(raw); s == "{}" || s == "null" || s == "[]" || s == `""` || s == "false" {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
