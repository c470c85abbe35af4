package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A host-network pod is given dnsPolicy ClusterFirstWithHostNet, so that its executor
// resolves the cluster's service names as any other pod does. A kubelet configured with no
// cluster DNS cannot do that: for every such pod it falls back to the node's resolv.conf
// (what ClusterFirst, the default, gives a host-network pod) and says so by two Warning
// events (MissingClusterDNS, about the pod and the node) that the API server stores and
// every events watcher decodes, on the CPUs the node's next pods start on. Once a node's
// kubelet has said it, the pods bound there are made with the default policy for a while
// (noClusterDNSFor): the same resolv.conf, without the warnings. Then one pod asks again,
// so a kubelet given a cluster DNS later is noticed.

// reasonNoClusterDNS is the kubelet's Warning reason for it.
const reasonNoClusterDNS = "MissingClusterDNS"

// noClusterDNSFor is how long a node's word that it has no cluster DNS is taken.
const noClusterDNSFor = 10 * time.Minute

// noClusterDNS notes that node's kubelet has no cluster DNS.
func (e *podMaker) noClusterDNS(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.noDNS == nil {
		e.noDNS = map[string]time.Time{}
	}
	e.noDNS[node] = e.clock.Now()
}

// dnsPolicy is the DNS policy of a pod bound to node ("": not yet bound, or kube-scheduler
// binding decides where).
func (e *podMaker) dnsPolicy(node string) corev1.DNSPolicy {
	if !e.cfg.HostNetwork {
		return ""
	}
	if node == "" {
		return corev1.DNSClusterFirstWithHostNet
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if at, ok := e.noDNS[node]; ok && e.clock.Now().Sub(at) < noClusterDNSFor {
		return "" // ClusterFirst: the node's resolv.conf for a host-network pod
	}
	return corev1.DNSClusterFirstWithHostNet
}
