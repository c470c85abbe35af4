package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/clock"
)

// benchCluster is an engine over 1,000 nodes with 3,000 pods bound to them (the kube-scale
// benchmark's shape, docs/benchmarks.md), every node offered once.
func benchCluster(b *testing.B) *Engine {
	e := testEngine(clock.NewFake(t0))
	for i := range 1000 {
		e.onNode(node(fmt.Sprintf("kwok-node-%d", i), "32", "128Gi", false))
	}
	for i := range 3000 {
		e.onPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "other"}, Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("kwok-node-%d", i%1000), Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("96Mi")}}}}}})
	}
	if n := len(offered(e)); n != 1000 {
		b.Fatalf("%d offers, want 1000", n)
	}
	return e
}

// BenchmarkReoffer1kNodes is a step's offer pass when nothing changed: what the loop
// spends at every pod event.
func BenchmarkReoffer1kNodes(b *testing.B) {
	e := benchCluster(b)
	b.ReportAllocs()
	for b.Loop() {
		e.mu.Lock()
		_, _ = e.offers.reoffer(e.clock.Now(), e.nodes, e.nodeNames(), e.frees())
		e.mu.Unlock()
	}
}

// BenchmarkDecline1kOffers is a round that declines every node's offer, and the next
// step that makes them again.
func BenchmarkDecline1kOffers(b *testing.B) {
	e := benchCluster(b)
	ids := make([]string, 0, 1000)
	b.ReportAllocs()
	for b.Loop() {
		ids = ids[:0]
		for _, o := range e.offers.byNode {
			ids = append(ids, o.id)
		}
		_ = e.Decline(context.Background(), ids, -time.Second)
		if n := len(offered(e)); n != 1000 {
			b.Fatalf("%d offers again, want 1000", n)
		}
	}
}
