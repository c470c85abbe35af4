package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/clock"
)

// TestHostNetworkPodsDNS: host-network pods ask for the cluster's DNS
// (ClusterFirstWithHostNet); once a node's kubelet warns that it has none
// (MissingClusterDNS, about one of our pods), the pods bound there get the default policy
// (the node's resolv.conf, as the kubelet falls back to) for noClusterDNSFor, with no wait
// note; then they ask again. A pod without host network keeps the default throughout.
func TestHostNetworkPodsDNS(t *testing.T) {
	clk := clock.NewFake(t0)
	e := testEngine(clk)
	e.cfg.HostNetwork = true
	e.onNode(node("n1", "2", "4Gi", false))
	_, p := launchOne(t, e, "j", "")
	if p.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Fatalf("first pod's dnsPolicy %q, want ClusterFirstWithHostNet", p.Spec.DNSPolicy)
	}
	updates(e)
	e.onEvent(warning(p, "", reasonNoClusterDNS, `pod: "x". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`))
	if u := updates(e); len(u) != 0 {
		t.Errorf("MissingClusterDNS told as a wait: %+v", u)
	}
	_, p2 := launchOne(t, e, "k", "")
	if p2.Spec.DNSPolicy != "" {
		t.Errorf("pod after the kubelet's warning: dnsPolicy %q, want the default", p2.Spec.DNSPolicy)
	}
	clk.Advance(noClusterDNSFor)
	if _, p3 := launchOne(t, e, "l", ""); p3.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("pod %s after the warning expired: dnsPolicy %q, want ClusterFirstWithHostNet", noClusterDNSFor, p3.Spec.DNSPolicy)
	}
	e.cfg.HostNetwork = false
	if _, p4 := launchOne(t, e, "m", ""); p4.Spec.DNSPolicy != "" {
		t.Errorf("pod without host network: dnsPolicy %q", p4.Spec.DNSPolicy)
	}
}
