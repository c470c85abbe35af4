package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	tstate "github.com/ejcloud/elasticjob/task"
)

// Binding modes (Config.Binding, kube_binding).
const (
	// BindingDirect creates pods with spec.nodeName: the kubelet runs them at once.
	BindingDirect = "direct"
	// BindingKubeScheduler creates pods pinned to the chosen node by a required node affinity
	// (matchFields metadata.name, as the DaemonSet controller does) and leaves the binding to
	// kube-scheduler, so volume topology, topology spread and scheduling plugins apply.
	BindingKubeScheduler = "kube-scheduler"
)

// nodeNameField is the node field kube-scheduler matches a pinned pod on.
const nodeNameField = "metadata.name"

// pin replaces pod's nodeName with a required node affinity to node, added to every term of
// the affinity the pod already has (its podTemplate's): the node must satisfy both.
func pin(pod *corev1.Pod, node string) {
	pod.Spec.NodeName = ""
	req := corev1.NodeSelectorRequirement{Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, req)
	}
}

// podNode is the node a pod is bound to, or else the one it is pinned to ("" for neither).
func podNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return pinnedNode(p)
}

func pinnedNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == nodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// unschedulable is a pinned pod kube-scheduler cannot bind to its node: a placement miss
// that goes back to the queue with kube-scheduler's reason (the pod is deleted).
func unschedulable(p *corev1.Pod) (phaseStatus, bool) {
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		return phaseStatus{}, false
	}
	node := pinnedNode(p)
	if node == "" {
		return phaseStatus{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return phaseStatus{state: tstate.Dropped, source: tstate.SourceMaster, reason: tstate.ReasonPlacementRefused,
				message: fmt.Sprintf("kube-scheduler cannot bind the pod to node %s (%s); back to the queue", node, oneLine(c.Message))}, true
		}
	}
	return phaseStatus{}, false
}
