//go:build e2e

package realkube

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/engine/kube"
)

// TestTaskPodIsConfined: a task pod runs as a non-root user without
// privilege escalation, capabilities or a service account token, on a
// read-only root file system with its sandbox and /tmp writable, and its
// job still fetches its app and runs there.
func TestTaskPodIsConfined(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", true)
	s.register(transient("confined", "rec", 1, "sleep 30"))
	s.trigger("confined")
	var p corev1.Pod
	eventually(t, waitLong, func() bool {
		ps := pods(t, ns, "confined")
		if len(ps) == 1 {
			p = ps[0]
		}
		return len(ps) == 1
	}, "the task's pod")
	eventually(t, waitLong, func() bool { return rec.count("confined", "start") >= 1 }, "the job to start in its confined pod")

	sc := p.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != kube.DefaultRunAsUser {
		t.Errorf("pod security context %+v", sc)
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v", a)
	}
	for _, v := range p.Spec.Volumes {
		if v.Projected != nil || v.Secret != nil {
			t.Errorf("volume %s carries a token or secret", v.Name)
		}
	}
	c := p.Spec.Containers[0].SecurityContext
	if c == nil || c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation || c.ReadOnlyRootFilesystem == nil ||
		!*c.ReadOnlyRootFilesystem || c.Capabilities == nil || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" {
		t.Errorf("task container security context %+v", c)
	}
	s.must(http.MethodPost, "/api/job/confined/disable", nil)
}
