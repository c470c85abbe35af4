package kube

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// Task pods run confined by default (the restricted Pod Security Standard):
// as a non-root user (DefaultRunAsUser unless the image's or the template's
// says otherwise), without privilege escalation or capabilities, with the
// runtime's seccomp profile, without a service account token, and, in the
// executor image, on a read-only root file system with writable emptyDirs
// for the sandbox and /tmp (an app's own image keeps a writable root: its
// jobs may write where the image expects). A pod template's
// securityContext (the pod's or the task container's) overrides these
// field by field; automountServiceAccountToken: true gives the token back.

// DefaultRunAsUser is the uid (and gid, and fsGroup) task pods run as by
// default: no image's root, the "nonroot" user of distroless images.
const DefaultRunAsUser int64 = 65532

// tmpVolume is the emptyDir mounted at /tmp of a read-only root file system.
const tmpVolume = "elasticjob-tmp"

func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: new(true), RunAsUser: new(DefaultRunAsUser), RunAsGroup: new(DefaultRunAsUser),
		FSGroup:        new(DefaultRunAsUser),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurity(readOnlyRoot bool) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(readOnlyRoot),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// overlay returns base with every field t sets replaced by t's (nil t:
// base). Both are security contexts of one type.
func overlay[T any](base, t *T) *T {
	if t == nil {
		return base
	}
	if base == nil {
		return t
	}
	var m map[string]json.RawMessage
	b, _ := json.Marshal(base)
	_ = json.Unmarshal(b, &m)
	var over map[string]json.RawMessage
	b, _ = json.Marshal(t)
	_ = json.Unmarshal(b, &over)
	for k, v := range over {
		m[k] = v
	}
	b, _ = json.Marshal(m)
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return t
	}
	return out
}
