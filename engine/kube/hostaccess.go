package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A podTemplate is a team's: anyone with the edit role in a namespace sets
// its apps' and jobs' templates, and the scheduler creates the pods with
// its own rights. What reaches the node through a pod (its host
// namespaces, its files, privilege, capabilities beyond a container's
// default, an unconfined kernel profile) is root on the node, and through
// it every other team's pods there, whatever the cluster's admission
// allows the scheduler; a system priority class has the kubelet evict them.
// Such a template is refused, by the Pod Security Standard "baseline" rules
// and the system classes, unless the operator lets every team's pods have
// it (kube_pod_template_host_access).

// baselineCaps are the capabilities the baseline standard lets a container add.
var baselineCaps = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
	"MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// safeSysctls are the namespaced sysctls the baseline standard allows.
var safeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}

// checkHostAccess names the first field of t that reaches the node.
func checkHostAccess(t *corev1.PodTemplateSpec) error {
	if t == nil {
		return nil
	}
	bad := func(field, what string) error {
		return fmt.Errorf("%w: podTemplate.%s: %s reaches the node, and other teams' pods on it; the scheduler's kube_pod_template_host_access=true allows it for every team",
			ErrPodTemplate, field, what)
	}
	s := t.Spec
	// hostNetwork is the operator's (kube_host_network): checkTemplate
	// refuses a template's that differs.
	switch {
	case s.HostPID:
		return bad("spec.hostPID", "the node's process namespace")
	case s.HostIPC:
		return bad("spec.hostIPC", "the node's IPC namespace")
	case strings.HasPrefix(s.PriorityClassName, "system-"):
		// A critical pod the kubelet cannot admit for want of room evicts
		// other pods of the node until it fits, and is the last to go under
		// pressure; the system classes are allowed in any namespace.
		return bad("spec.priorityClassName", fmt.Sprintf("the system priority class %s (the kubelet evicts other pods of the node to make room for it)", s.PriorityClassName))
	}
	for i, v := range s.Volumes {
		if v.HostPath != nil {
			return bad(fmt.Sprintf("spec.volumes[%d] (%q).hostPath", i, v.Name), "a directory of the node")
		}
	}
	if sc := s.SecurityContext; sc != nil {
		if err := checkProfiles("spec.securityContext", sc.SeccompProfile, sc.AppArmorProfile, sc.SELinuxOptions, sc.WindowsOptions, bad); err != nil {
			return err
		}
		for _, sy := range sc.Sysctls {
			if !slices.Contains(safeSysctls, sy.Name) {
				return bad(fmt.Sprintf("spec.securityContext.sysctls[%q]", sy.Name), "a sysctl outside the safe set")
			}
		}
	}
	for _, c := range s.Containers {
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		field := fmt.Sprintf("spec.containers[%s].securityContext", c.Name)
		if sc.Privileged != nil && *sc.Privileged {
			return bad(field+".privileged", "a privileged container")
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			return bad(field+".procMount", "an unmasked /proc")
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if !slices.Contains(baselineCaps, c) {
					return bad(field+".capabilities.add", fmt.Sprintf("capability %s", c))
				}
			}
		}
		if err := checkProfiles(field, sc.SeccompProfile, sc.AppArmorProfile, sc.SELinuxOptions, sc.WindowsOptions, bad); err != nil {
			return err
		}
	}
	return nil
}

// checkProfiles refuses an unconfined seccomp or AppArmor profile, an
// SELinux type, user or role of the template's choosing, and a Windows
// host process.
func checkProfiles(field string, seccomp *corev1.SeccompProfile, apparmor *corev1.AppArmorProfile, selinux *corev1.SELinuxOptions,
	windows *corev1.WindowsSecurityContextOptions, bad func(field, what string) error) error {
	switch {
	case seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		return bad(field+".seccompProfile", "an unconfined seccomp profile")
	case apparmor != nil && apparmor.Type == corev1.AppArmorProfileTypeUnconfined:
		return bad(field+".appArmorProfile", "an unconfined AppArmor profile")
	case selinux != nil && (selinux.User != "" || selinux.Role != "" ||
		!slices.Contains([]string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}, selinux.Type)):
		return bad(field+".seLinuxOptions", "an SELinux user, role or type of its choosing")
	case windows != nil && windows.HostProcess != nil && *windows.HostProcess:
		return bad(field+".windowsOptions.hostProcess", "a Windows host process")
	}
	return nil
}
