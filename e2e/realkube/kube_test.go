//go:build e2e

package realkube

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ejcloud/elasticjob/engine/kube"
)

// TestShardedCronJob: a 3-shard cron job from a package hosted by the scheduler runs as
// bound pods, once per fire; its history, its statuses and its logs are there after the pods
// are gone.
func TestShardedCronJob(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", true)
	j := transient("cron3", "rec", 3, "sleep 1")
	j["cron"] = "0/3 * * * * ?"
	s.register(j)
	eventually(t, waitLong, func() bool { return rec.count("cron3", "end") >= 6 }, "two executions of 3 shards to end")
	eventually(t, waitLong, func() bool { return len(s.ended("cron3")) >= 6 }, "their ends in the history")
	s.must(http.MethodPost, "/api/job/cron3/disable", nil)
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "")) == 0 }, "the finished pods to be deleted")
	var ended []execution // those that ran to their end; one under way at the disable is killed
	items := map[int]int{}
	for _, e := range s.ended("cron3") {
		if !e.Success {
			if !strings.Contains(deref(e.FailureCause), "killed") {
				t.Errorf("execution %s failed: %v", e.TaskID, deref(e.FailureCause))
			}
			continue
		}
		ended = append(ended, e)
		items[e.ShardingItem]++
		if n := len(rec.events("cron3")[e.TaskID]); n != 2 {
			t.Errorf("task %s reported %v to the recorder, want start and end once", e.TaskID, rec.events("cron3")[e.TaskID])
		}
	}
	if len(items) != 3 || items[0] < 2 || items[1] < 2 || items[2] < 2 { // the disable may kill some shards of the last
		t.Errorf("shards ended %v, want each of 0,1,2 twice at least", items)
	}
	// The logs, read from the tails kept once the pods are gone.
	var chunk struct {
		Data string `json:"data"`
	}
	decode(t, s.must(http.MethodGet, "/api/job/logs/"+ended[0].TaskID+"?format=json", nil), &chunk)
	if !strings.Contains(chunk.Data, "of cron3 runs") {
		t.Errorf("stdout of %s: %q", ended[0].TaskID, chunk.Data)
	}
	decode(t, s.must(http.MethodGet, "/api/job/logs/"+ended[0].TaskID+"?stream=stderr&format=json", nil), &chunk)
	if !strings.Contains(chunk.Data, "a line on stderr") {
		t.Errorf("stderr of %s: %q", ended[0].TaskID, chunk.Data)
	}
	states := map[string]int{}
	for _, tr := range s.traces("cron3") {
		states[tr.State]++
	}
	if states["TASK_FINISHED"] < 6 || states["TASK_RUNNING"] < 6 {
		t.Errorf("status traces %v", states)
	}
}

// TestFailureCauses: a job over its memory limit fails with the limit named, one past its
// timeout as timed out, one exiting non-zero with its exit code.
func TestFailureCauses(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", false)
	s.register(transient("oom", "rec", 1, "oom"))
	slow := transient("slow", "rec", 1, "sleep 60")
	slow["timeoutSeconds"] = 2
	s.register(slow)
	s.register(transient("fails", "rec", 1, "fail"))
	for _, name := range []string{"oom", "slow", "fails"} {
		s.trigger(name)
	}
	want := map[string]string{"oom": " MB exceeded", "slow": "timed out after 2s", "fails": "exit"}
	for name, cause := range want {
		eventually(t, waitLong, func() bool { return len(s.ended(name)) == 1 }, "%s to end", name)
		e := s.ended(name)[0]
		if e.Success || e.FailureCause == nil || !strings.Contains(*e.FailureCause, cause) ||
			(name == "oom" && !strings.HasPrefix(*e.FailureCause, "memory limit of ")) {
			t.Errorf("%s: success %v, cause %v; want a failure with %q", name, e.Success, deref(e.FailureCause), cause)
		}
	}
}

// checkPodSpec: bound, never restarted, requests = limits, named by labels and annotations
// (job lost of app), a deadline from the job's timeout.
func checkPodSpec(t *testing.T, p *corev1.Pod, app string) {
	t.Helper()
	c := p.Spec.Containers[0]
	if p.Spec.NodeName != "127.0.0.1" || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("node %q restart %q", p.Spec.NodeName, p.Spec.RestartPolicy)
	}
	// 0.05 CPUs and 32 MB for the shard, plus the app executor's 0.05 and 64 (one shard).
	if cpu, mem := c.Resources.Limits.Cpu().MilliValue(), c.Resources.Limits.Memory().Value(); cpu != 100 || mem != 96<<20 {
		t.Errorf("limits %dm %d", cpu, mem)
	}
	if !c.Resources.Requests.Cpu().Equal(*c.Resources.Limits.Cpu()) || !c.Resources.Requests.Memory().Equal(*c.Resources.Limits.Memory()) {
		t.Errorf("requests %v != limits %v", c.Resources.Requests, c.Resources.Limits)
	}
	if p.Labels[kube.LabelJob] != "lost" || p.Labels[kube.LabelApp] != app || p.Labels[kube.LabelShard] != "0" ||
		p.Annotations[kube.AnnotationJob] != "lost" || !strings.HasPrefix(p.Annotations[kube.AnnotationTask], "lost@-@0@-@") {
		t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
	}
	if d := p.Spec.ActiveDeadlineSeconds; d == nil || *d < 600 {
		t.Errorf("activeDeadlineSeconds %v", d)
	}
}

// TestCordonedNodeHoldsWork: with the only node cordoned, a triggered job waits with a
// reason and no pod; uncordoned, it runs.
func TestCordonedNodeHoldsWork(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", false)
	s.register(transient("held", "rec", 2, "sleep 0"))
	cordon(t, true)
	t.Cleanup(func() { cordon(t, false) })
	s.trigger("held")
	var why string
	eventually(t, waitLong, func() bool {
		queued, w := s.waiting("held")
		why = w
		return queued && strings.Contains(w, "reason")
	}, "a waiting reason for the held job")
	t.Logf("waiting: %s", why)
	if n := len(pods(t, ns, "held")); n != 0 {
		t.Errorf("%d pods on a cordoned node", n)
	}
	cordon(t, false)
	eventually(t, waitLong, func() bool { return rec.count("held", "end") == 2 }, "the job to run once the node is uncordoned")
}

func cordon(t *testing.T, on bool) {
	t.Helper()
	// A merge patch, not a read-modify-write: the kubelet updates its node's status
	// all the time, and an Update from a stale read is refused with a conflict.
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := admin.CoreV1().Nodes().Patch(context.Background(), "127.0.0.1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
