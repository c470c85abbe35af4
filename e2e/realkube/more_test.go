//go:build e2e

package realkube

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGangWaitsWhole: with room for 3 of a job's 4 shards, none starts and the execution
// waits with the reason; once the room is there, all 4 run.
func TestGangWaitsWhole(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", false)
	// The node has 2 CPUs: a pod of someone else's takes 1.2; the gang asks for 4 × 0.2 and
	// 0.05 for the app's executor, 0.85 > 0.8 (3 shards would fit).
	blocker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: ns}, Spec: corev1.PodSpec{
		NodeName: "127.0.0.1", RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
		Containers: []corev1.Container{{Name: "c", Image: executorImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m")}}}},
	}}
	if _, err := admin.CoreV1().Pods(ns).Create(context.Background(), blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := transient("gang", "rec", 4, "sleep 0")
	j["cpuCount"] = 0.2
	s.register(j)
	s.trigger("gang")
	var why string
	eventually(t, waitLong, func() bool {
		_, why = s.waiting("gang")
		return strings.Contains(why, "CPU")
	}, "the gang's waiting reason")
	t.Logf("waiting: %s", why)
	if n := len(pods(t, ns, "gang")); n != 0 || rec.count("gang", "start") != 0 {
		t.Fatalf("%d pods, %d runs of a gang that does not fit", n, rec.count("gang", "start"))
	}
	deletePod(t, ns, "blocker")
	eventually(t, waitLong, func() bool { return rec.count("gang", "end") == 4 }, "the 4 shards to run")
}

// TestAppImage: an app that names a container image runs its tasks in that image; an init
// container copies the executor into the pod first.
func TestAppImage(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "imaged", "appURL": rec.url + "/app.tgz", "bootstrapScript": "bin/run.sh",
		"cpuCount": 0.05, "memoryMB": 64, "containerImage": "localhost/busybox:1"})
	s.register(transient("inimage", "imaged", 1, "sleep 3"))
	s.trigger("inimage")
	eventually(t, waitLong, func() bool { return rec.count("inimage", "start") == 1 }, "the task to start in the app's image")
	ps := pods(t, ns, "inimage")
	if len(ps) != 1 || ps[0].Spec.Containers[0].Image != "localhost/busybox:1" || len(ps[0].Spec.InitContainers) != 1 ||
		ps[0].Spec.InitContainers[0].Image != executorImage {
		t.Fatalf("pods %+v: want the app's image with the executor's as init container", ps)
	}
	eventually(t, waitLong, func() bool { return len(s.ended("inimage")) == 1 }, "the task to end")
	if e := s.ended("inimage")[0]; !e.Success {
		t.Errorf("failed: %s", deref(e.FailureCause))
	}
}

// TestImageNotOnNode: an app whose image is not on the node (imagePullPolicy Never, as in
// this cluster) fails its task at once with the cause said plainly (from the kubelet's
// ErrImageNeverPull event or the pod's status, whichever the scheduler sees first), and its
// pod is deleted.
func TestImageNotOnNode(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "noimage", "appURL": rec.url + "/app.tgz", "bootstrapScript": "bin/run.sh",
		"cpuCount": 0.05, "memoryMB": 64, "containerImage": "localhost/absent:1"})
	s.register(transient("noimage", "noimage", 1, "sleep 0"))
	s.trigger("noimage")
	eventually(t, waitLong, func() bool { return len(s.ended("noimage")) == 1 }, "the task to end")
	e := s.ended("noimage")[0]
	want := "image localhost/absent:1 is not on node 127.0.0.1 and imagePullPolicy is Never"
	if e.Success || !strings.HasPrefix(deref(e.FailureCause), want) {
		t.Errorf("success %v, cause %q; want a failure %q…", e.Success, deref(e.FailureCause), want)
	}
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "noimage")) == 0 }, "its pod to be deleted")
	if rec.count("noimage", "start") != 0 {
		t.Error("the job ran")
	}
}
