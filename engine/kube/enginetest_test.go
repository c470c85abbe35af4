package kube_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/enginetest"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/task"
)

// TestEngineContract runs the engine contract (engine/enginetest) on the Kubernetes engine
// over client-go's fake clientset with one node. No kubelet runs the pods: the checks play
// the executor in each pod through Report, as the scheduler's API hands it the reports.
func TestEngineContract(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Subject {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}
		e, err := kube.New(kube.Config{Client: fake.NewClientset(n, ns), Namespace: "jobs", ExecutorImage: "img",
			SchedulerURLs: []string{"http://127.0.0.1:1"}, TaskToken: func(id string) string { return "t-" + id }})
		if err != nil {
			t.Fatal(err)
		}
		report := func(ctx context.Context, id string, s task.State) error {
			return e.Report(ctx, engine.ExecutorReport{TaskID: id, State: s})
		}
		return enginetest.Subject{
			Driver: e, Run: e.Run,
			Start:  func(ctx context.Context, id string) error { return report(ctx, id, task.Running) },
			Finish: func(ctx context.Context, id string) error { return report(ctx, id, task.Finished) },
		}
	})
}
