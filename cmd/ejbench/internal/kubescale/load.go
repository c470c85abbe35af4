package kubescale

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The load of the kube-scale scenario: jobs ks-00000 … of 1–10 shards (1 + i%10), each
// fired once every period at its offset i%period seconds (a seconds-cron), running
// 2–5 s (2 + i%4) and exiting 1 every 20th job (i%20 == 19), 0 otherwise.

// Per-shard resources, and the app's executor's (the least allowed: on Kubernetes every
// pod carries a share of it, so the least keeps the same pods on both sides: 101m, 65 Mi).
const (
	ksShardCPUs  = 0.1
	ksShardMemMB = 64
	ksApp        = "ks"
	ksAppJSON    = `{"appName":"ks","appURL":"http://127.0.0.1:9/ks.tgz","bootstrapScript":"bin/run.sh","cpuCount":0.001,"memoryMB":1}`
)

// ksPodRes is what each of our pods asks (requests = limits): the shard's resources plus
// its share of the app executor's, rounded up (engine/kube/pods.go).
var ksPodRes = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("101m"), corev1.ResourceMemory: resource.MustParse("65Mi")}

func ksName(i int) string { return fmt.Sprintf("ks-%05d", i) }

func ksShards(i int) int { return 1 + i%10 }

func ksRunSecs(i int) int { return 2 + i%4 }

func ksExit(i int) int {
	if i%20 == 19 {
		return 1
	}
	return 0
}

func ksOffset(i, p int) int { return i % p }

// ksIndex is the i of a job name ks-NNNNN (-1 for any other).
func ksIndex(name string) int {
	s, ok := strings.CutPrefix(name, "ks-")
	if !ok || len(s) != 5 {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}

// ksCron is the Quartz cron of firing every period seconds at second offset of the period:
// the period divides a minute, or is whole minutes that divide an hour.
func ksCron(offset, period int) (string, error) {
	switch {
	case period > 0 && period <= 60 && 60%period == 0:
		return fmt.Sprintf("%d/%d * * * * ?", offset, period), nil
	case period > 60 && period%60 == 0 && 3600%period == 0:
		return fmt.Sprintf("%d %d/%d * * * ?", offset%60, offset/60, period/60), nil
	}
	return "", fmt.Errorf("period %d s: it must divide a minute, or be whole minutes that divide an hour", period)
}

// ksFireBefore is the last fire of a job with this offset at or before t (epoch seconds are
// fires where epoch ≡ offset mod period, in UTC).
func ksFireBefore(t time.Time, offset, period int) time.Time {
	s := t.Unix()
	f := s - ((s-int64(offset))%int64(period)+int64(period))%int64(period)
	return time.Unix(f, 0)
}

func ksParam(i int) string { return fmt.Sprintf("run=%ds exit=%d", ksRunSecs(i), ksExit(i)) }

// ksJobJSON is job i's registration with our scheduler.
func ksJobJSON(i, period int) string {
	c, _ := ksCron(ksOffset(i, period), period)
	return fmt.Sprintf(`{"jobName":%q,"appName":%q,"jobExecutionType":"TRANSIENT","cron":%q,"timeZone":"UTC","shardingTotalCount":%d,"cpuCount":%g,"memoryMB":%d,"jobParameter":%q}`,
		ksName(i), ksApp, c, ksShards(i), ksShardCPUs, ksShardMemMB, ksParam(i))
}

// ksJobObject is job i as a Kubernetes Indexed Job fired at fire: completions = parallelism
// = its shards, no retry of a failed index (as our job without failover), deleted with its
// pods once finished (ttlSecondsAfterFinished 0: as ours deletes a finished pod), and a pod
// template like our pods: the same container, environment and resources, without a node (kube-
// scheduler places it).
func ksJobObject(i int, fire time.Time, image string) (*batchv1.Job, error) {
	var jc jobs.Config
	if err := json.Unmarshal([]byte(ksJobJSON(i, 60)), &jc); err != nil {
		return nil, err
	}
	var ac app.Config
	if err := json.Unmarshal([]byte(ksAppJSON), &ac); err != nil {
		return nil, err
	}
	n := int32(ksShards(i))
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ExecutionSource: jobs.SourceNormal, Job: jc, App: ac,
		ShardingContext: jobs.ShardingContext{JobName: jc.JobName, ShardingTotalCount: int(n), JobParameter: jc.JobParameter}}
	taskID := fmt.Sprintf("%s@-@0@-@READY@-@kwok-node-0000@-@%s", jc.JobName, strings.Repeat("0", 36))
	env := []corev1.EnvVar{
		{Name: "ELASTICJOB_TASK_ID", Value: taskID},
		{Name: "ELASTICJOB_TASK_DATA", Value: string(td.Marshal())},
		{Name: "ELASTICJOB_REPORT_URLS", Value: "http://127.0.0.1:8899"},
		{Name: "ELASTICJOB_REPORT_TOKEN", Value: "ejt1." + strings.Repeat("x", 43)},
		{Name: "ELASTICJOB_EXECUTOR_ID", Value: ksApp + "@-@kwok-node-0000"},
		{Name: "ELASTICJOB_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "ELASTICJOB_SANDBOX", Value: "/elasticjob"},
		{Name: "ELASTICJOB_MEMORY_LIMIT_MB", Value: "65"},
	}
	mode, zero, grace := batchv1.IndexedCompletion, int32(0), int64(10)
	name := fmt.Sprintf("%s-%d", jc.JobName, fire.Unix())
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"elasticjob.io/job": jc.JobName}},
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &mode, BackoffLimitPerIndex: &zero,
			TTLSecondsAfterFinished: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"elasticjob.io/job": jc.JobName},
					Annotations: map[string]string{ksFireAnnotation: strconv.FormatInt(fire.Unix(), 10)}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(false),
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "task", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"/elasticjob-executor", "pod"}, Env: env,
						Resources: corev1.ResourceRequirements{Requests: ksPodRes, Limits: ksPodRes}}},
				},
			},
		},
	}, nil
}

// ksFireAnnotation carries a Job pod's fire instant (epoch seconds).
const ksFireAnnotation = "bench.elasticjob.io/fire"

// jobFirer creates the Indexed Jobs of jobs [0, n) at their fires, as a seconds-cron would.
type jobFirer struct {
	cs      kubernetes.Interface
	ns      string
	image   string
	n       int
	period  int
	created atomic.Int64
	failed  atomic.Int64
	first   atomic.Value
	lateSum atomic.Int64 // the creates' lateness after their fire, in µs
}

// run fires every second from now until ctx ends or until stops.
func (f *jobFirer) run(ctx context.Context, until time.Time) {
	byOffset := make([][]int, f.period)
	for i := range f.n {
		byOffset[ksOffset(i, f.period)] = append(byOffset[ksOffset(i, f.period)], i)
	}
	work := make(chan [2]int64, 4096) // job, fire
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for w := range work {
				fire := time.Unix(w[1], 0)
				j, err := ksJobObject(int(w[0]), fire, f.image)
				if err == nil {
					_, err = f.cs.BatchV1().Jobs(f.ns).Create(ctx, j, metav1.CreateOptions{})
				}
				if err != nil {
					if ctx.Err() == nil {
						f.failed.Add(1)
						f.first.CompareAndSwap(nil, err)
					}
					continue
				}
				f.created.Add(1)
				f.lateSum.Add(time.Since(fire).Microseconds())
			}
		})
	}
	next := time.Now().Truncate(time.Second).Add(time.Second)
	for ctx.Err() == nil && next.Before(until) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
			for _, i := range byOffset[int(next.Unix()%int64(f.period))] {
				work <- [2]int64{int64(i), next.Unix()}
			}
			next = next.Add(time.Second)
		}
	}
	close(work)
	wg.Wait()
}
