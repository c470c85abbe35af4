//go:build e2e

package realkube

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestKubeSchedulerBinding: with kube_binding=kube-scheduler a job's pods are created
// without nodeName, pinned to the node the scheduler chose, and bound there by the cluster's
// kube-scheduler; a pod kube-scheduler cannot bind (its template's node selector matches no
// node) comes back as a placement miss with kube-scheduler's reason.
func TestKubeSchedulerBinding(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns, extra: []string{"--kube-binding", "kube-scheduler"}})
	s.publishApp("rec", false)
	s.register(transient("pinned", "rec", 2, "sleep 2"))
	s.trigger("pinned")
	var seen []corev1.Pod
	eventually(t, waitLong, func() bool {
		for _, p := range pods(t, ns, "pinned") {
			if p.Spec.NodeName != "" {
				seen = append(seen, p)
			}
		}
		return rec.count("pinned", "end") == 2
	}, "the 2 shards to run")
	if len(seen) == 0 {
		t.Fatal("no bound pod seen while the shards ran")
	}
	for _, p := range seen {
		a := p.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
			!strings.Contains(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String(), "127.0.0.1") || p.Spec.NodeName != "127.0.0.1" {
			t.Errorf("pod %s: node %q affinity %v", p.Name, p.Spec.NodeName, a)
		}
	}
	eventually(t, waitLong, func() bool { return len(s.ended("pinned")) == 2 }, "the runs' ends in the history")

	nowhere := transient("nowhere", "rec", 1, "sleep 0")
	nowhere["podTemplate"] = map[string]any{"spec": map[string]any{"nodeSelector": map[string]string{"disk": "none-here"}}}
	s.register(nowhere)
	s.trigger("nowhere")
	var msg string
	eventually(t, waitLong, func() bool {
		for _, tr := range s.traces("nowhere") {
			if strings.Contains(tr.Message, "kube-scheduler cannot bind") {
				msg = tr.Message
				return true
			}
		}
		return false
	}, "the placement miss in the status traces")
	t.Logf("miss: %s", msg)
	if !strings.Contains(msg, "node affinity/selector") || rec.count("nowhere", "start") != 0 {
		t.Errorf("miss %q, %d runs", msg, rec.count("nowhere", "start"))
	}
	s.must(http.MethodPost, "/api/job/nowhere/disable", nil)
}
