package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// TestBindingKubeScheduler: in kube-scheduler mode the pod has no nodeName and is pinned to
// the chosen node in every term of its template's own required node affinity; its room is
// counted on that node before it is bound; an Unschedulable condition is a placement miss.
func TestBindingKubeScheduler(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	p, err := testPod(t, e, app.Config{AppName: "a"}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1})
	if err != nil || p.Spec.NodeName != "n1" || p.Spec.Affinity != nil {
		t.Fatalf("direct: %v node %q affinity %v", err, p.Spec.NodeName, p.Spec.Affinity)
	}
	e.cfg.Binding = BindingKubeScheduler
	tmpl := `{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
		{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}}}}`
	p, err = testPod(t, e, app.Config{AppName: "a"}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1, PodTemplate: app.PodTemplate(tmpl)})
	if err != nil || p.Spec.NodeName != "" {
		t.Fatalf("kube-scheduler: %v node %q", err, p.Spec.NodeName)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 {
		t.Fatalf("terms %+v", terms)
	}
	for _, term := range terms {
		if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Key != "metadata.name" || term.MatchFields[0].Values[0] != "n1" {
			t.Errorf("term %+v", term)
		}
	}
	if podNode(p) != "n1" {
		t.Errorf("podNode %q", podNode(p))
	}
	p.UID, p.Status.Phase = "u1", corev1.PodPending
	e.onPod(p)
	e.mu.Lock()
	u := e.usage[p.Namespace+"/"+p.Name]
	e.mu.Unlock()
	if u.node != "n1" {
		t.Errorf("the pinned pod's room is not counted on n1: %+v", u)
	}
	if _, ok := statusOfPod(p, 64); ok {
		t.Errorf("a pending pinned pod has a status")
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}}
	st, ok := statusOfPod(p, 64)
	if !ok || st.state != tstate.Dropped || st.message != "kube-scheduler cannot bind the pod to node n1 (0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.); back to the queue" {
		t.Errorf("unschedulable: %v %+v", ok, st)
	}
}
