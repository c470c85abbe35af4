package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/store/memory"
	tstate "github.com/ejcloud/elasticjob/task"
)

func pod(phase corev1.PodPhase, reason string, cs ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: phase, Reason: reason,
		Message: "details", StartTime: &metav1.Time{Time: time.Unix(1, 0)}, ContainerStatuses: cs}}
}

func terminated(reason string, code int32, started bool) corev1.ContainerStatus {
	t := &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}
	if started {
		t.StartedAt = metav1.Time{Time: time.Unix(2, 0)}
	}
	return corev1.ContainerStatus{Name: containerName, Image: "img", State: corev1.ContainerState{Terminated: t}}
}

func waiting(reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: containerName, Image: "registry.example/app:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "no such image"}}}
}

func TestStatusOfPod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		ok      bool
		state   tstate.State
		source  tstate.Source
		message string
	}{
		{"pending", pod(corev1.PodPending, ""), false, "", "", ""},
		{"running", pod(corev1.PodRunning, ""), true, tstate.Running, tstate.SourceAgent, ""},
		{"succeeded", pod(corev1.PodSucceeded, ""), true, tstate.Finished, tstate.SourceAgent, "succeeded"},
		{"exit code", pod(corev1.PodFailed, "", terminated("Error", 3, true)), true, tstate.Failed, tstate.SourceAgent, "exited with code 3"},
		{"oom", pod(corev1.PodFailed, "", terminated("OOMKilled", 137, true)), true, tstate.Failed, tstate.SourceAgent, "memory limit of 96 MB exceeded"},
		{"deadline", pod(corev1.PodFailed, "DeadlineExceeded"), true, tstate.Failed, tstate.SourceAgent, "timed out"},
		{"evicted", pod(corev1.PodFailed, "Evicted"), true, tstate.Lost, tstate.SourceAgent, "evicted"},
		{"out of cpu", pod(corev1.PodFailed, "OutOfcpu"), true, tstate.Dropped, tstate.SourceAgent, "back to the queue"},
		{"out of memory", pod(corev1.PodFailed, "OutOfmemory"), true, tstate.Dropped, tstate.SourceAgent, "back to the queue"},
		{"never started", pod(corev1.PodFailed, "", terminated("ContainerStatusUnknown", 137, false)), true, tstate.Dropped, tstate.SourceAgent, "never started"},
		{"image never pulled", pod(corev1.PodPending, "", waiting("ErrImageNeverPull")), true, tstate.Error, tstate.SourceAgent, "image registry.example/app:1 is not on node n1 and imagePullPolicy is Never"},
		{"image pull back-off", pod(corev1.PodPending, "", waiting("ImagePullBackOff")), true, tstate.Error, tstate.SourceAgent, "cannot be pulled"},
		{"container creating", pod(corev1.PodPending, "", waiting("ContainerCreating")), false, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, ok := statusOfPod(tc.pod, 96)
			if ok != tc.ok || ps.state != tc.state || ps.source != tc.source || !strings.Contains(ps.message, tc.message) {
				t.Errorf("got %+v %v, want %s %s %q", ps, ok, tc.state, tc.source, tc.message)
			}
		})
	}
}

// TestRejectedPodIsAPlacementMiss: the update a pod the kubelet refused (OutOfcpu) becomes
// sends the scheduler queues the shard again at once, without the job's failover flag:
// TASK_DROPPED from SOURCE_AGENT while the task is STAGING is "never started".
func TestRejectedPodIsAPlacementMiss(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := registry.New(memory.New())
	if err := reg.Config().AddApp(ctx, app.Config{AppName: "a", AppURL: "http://x/a.tgz", BootstrapScript: "run.sh", CPUCount: 0.1, MemoryMB: 32}); err != nil {
		t.Fatal(err)
	}
	job := jobs.Config{JobName: "j", AppName: "a", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 32}
	if err := reg.Config().AddJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	tid := jobs.NewTaskID("j", 0, jobs.KindReady, "n1").String()
	if err := reg.Change().Launch("j", 0, tstate.Entry{TaskID: tid, AgentID: "n1", State: "TASK_STAGING"}).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	s := scheduler.New(scheduler.Deps{Registry: reg, Driver: nopDriver{}})
	go func() { _ = s.Run(ctx) }()
	ps, _ := statusOfPod(pod(corev1.PodFailed, "OutOfcpu"), 64)
	handled := make(chan bool, 1)
	s.UpdateAsync(ctx, engine.Status{TaskID: tid, AgentID: "n1", State: ps.state, Source: ps.source, Reason: ps.reason, Message: ps.message},
		func(ok bool) { handled <- ok })
	if !<-handled {
		t.Fatal("the update was not handled")
	}
	q, err := reg.Work().FailoverQueue(ctx)
	if err != nil || len(q) != 1 || q[0].Job != "j" || q[0].Item != 0 || !q[0].Retry {
		t.Fatalf("failover queue %+v (%v): want shard 0 queued again as never started", q, err)
	}
}

type nopDriver struct{}

func (nopDriver) Accept(context.Context, []string, []engine.TaskLaunch, time.Duration) error {
	return nil
}
func (nopDriver) Decline(context.Context, []string, time.Duration) error { return nil }
func (nopDriver) Suppress(context.Context) error                         { return nil }
func (nopDriver) Revive(context.Context) error                           { return nil }
func (nopDriver) Kill(context.Context, string, string) error             { return nil }
func (nopDriver) Reconcile(context.Context, []engine.TaskRef) error      { return nil }
func (nopDriver) Shutdown(context.Context, string, string) error         { return nil }
func (nopDriver) Capabilities() engine.Capabilities                      { return Capabilities() }
func (nopDriver) NamespaceCaps([]string) map[string]engine.NamespaceCap  { return nil }
