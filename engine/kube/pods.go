package kube

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// Labels and annotations of the task pods. Labels hold names made safe for label values
// (selectors); the annotations hold them exactly.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedBy       = "elasticjob"
	LabelFramework  = "elasticjob.io/framework"
	LabelApp        = "elasticjob.io/app"
	LabelJob        = "elasticjob.io/job"
	LabelShard      = "elasticjob.io/shard"
	AnnotationTask  = "elasticjob.io/task-id"
	AnnotationApp   = "elasticjob.io/app"
	AnnotationJob   = "elasticjob.io/job"
	AnnotationExec  = "elasticjob.io/executor-id"
	AnnotationShare = "elasticjob.io/executor-share"
)

// Paths inside the task pods.
const (
	containerName = "task"
	sandboxVolume = "sandbox"
	sandboxPath   = "/elasticjob"
	// ExecutorInImage is the executor in kube_executor_image (make image).
	ExecutorInImage = "/elasticjob-executor"
	// executorCopy is where the init container copies the executor for an app's own image.
	executorCopy = sandboxPath + "/bin/elasticjob-executor"
)

// Environment of the executor in a pod (executor.PodSettings reads it).
const (
	EnvTaskData   = "ELASTICJOB_TASK_DATA"
	EnvTaskID     = "ELASTICJOB_TASK_ID"
	EnvReportURLs = "ELASTICJOB_REPORT_URLS"
	EnvToken      = "ELASTICJOB_REPORT_TOKEN"
	EnvExecutorID = "ELASTICJOB_EXECUTOR_ID"
	EnvNode       = "ELASTICJOB_NODE_NAME"
	EnvSandbox    = "ELASTICJOB_SANDBOX"
	EnvMemLimit   = "ELASTICJOB_MEMORY_LIMIT_MB"
)

// podSpec is what one task's pod is built from.
type podSpec struct {
	launch engine.TaskLaunch
	node   string
	// share is the task's part of its app executor's resources (see share in driver.go).
	shareCPUs, shareMem float64
	token               string
	ns                  string           // its Kubernetes namespace ("": Config.Namespace)
	dns                 corev1.DNSPolicy // Engine.dnsPolicy of its node
}

// podMaker builds the tasks' pods from the engine's configuration (shared with the Engine,
// read only) and keeps, under its own lock, the nodes whose kubelet has no cluster DNS
// (dns.go).
type podMaker struct {
	cfg         *Config
	frameworkID string
	clock       clock.Clock

	mu    sync.Mutex
	noDNS map[string]time.Time // nodes whose kubelet said it has no cluster DNS, and when
}

// build makes the bound pod of one task: restartPolicy Never, requests = limits = the
// shard's resources plus its share of the app executor's, labels and annotations naming
// app, job, shard and task, activeDeadlineSeconds from the job's timeout.
func (e *podMaker) build(ps podSpec) (*corev1.Pod, error) {
	l, td := ps.launch, ps.launch.Task
	tmpl, tmplErr := MergePodTemplates(td.App.PodTemplate, td.Job.PodTemplate)
	// The pod's task data leaves the templates out: they are the pod itself. It is encoded
	// as the Mesos client encodes TaskInfo.data, so the executor reads one format.
	td.App.PodTemplate, td.Job.PodTemplate = nil, nil
	data := td.Marshal()
	cpus, mem := l.CPUs+ps.shareCPUs, l.MemMB+ps.shareMem
	res := corev1.ResourceList{
		corev1.ResourceCPU:    cpuQuantity(cpus),
		corev1.ResourceMemory: memQuantity(mem),
	}
	env := e.podEnv(ps, data, mem)
	sb := e.sandbox(td.App.ContainerImage, res)
	grace := int64(math.Ceil(e.killGrace().Seconds())) + 5
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(td.Job.JobName, td.ShardingContext.ShardingItem, l.TaskID), Namespace: cmp.Or(ps.ns, e.cfg.Namespace),
			Labels: map[string]string{
				LabelManagedBy: ManagedBy, LabelFramework: labelValue(e.frameworkID),
				LabelApp: labelValue(td.App.AppName), LabelJob: labelValue(td.Job.JobName),
				LabelShard: strconv.Itoa(td.ShardingContext.ShardingItem),
			},
			Annotations: map[string]string{
				AnnotationTask: l.TaskID, AnnotationApp: td.App.AppName, AnnotationJob: td.Job.JobName,
				AnnotationExec: l.Executor.ID, AnnotationShare: fmt.Sprintf("cpus=%g,mem=%g", ps.shareCPUs, ps.shareMem),
			},
		},
		Spec: corev1.PodSpec{
			NodeName: ps.node, RestartPolicy: corev1.RestartPolicyNever, HostNetwork: e.cfg.HostNetwork,
			ServiceAccountName: e.cfg.ServiceAccount, AutomountServiceAccountToken: new(false),
			NodeSelector: e.cfg.NodeSelector, Tolerations: e.cfg.Tolerations,
			TerminationGracePeriodSeconds: &grace,
			InitContainers:                sb.inits,
			SecurityContext:               podSecurity(),
			Containers: []corev1.Container{{
				Name: containerName, Image: sb.image, ImagePullPolicy: e.cfg.PullPolicy, Command: sb.command, Env: env,
				Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
				VolumeMounts:    sb.mounts,
				SecurityContext: containerSecurity(sb.readOnlyRoot),
			}},
			Volumes: sb.volumes,
		},
	}
	pod.Spec.DNSPolicy = ps.dns
	addKubeSecrets(pod, td.Job)
	if t := td.Job.TimeoutSeconds; t > 0 && td.Job.JobExecutionType != jobs.Daemon {
		// The executor ends a run at its timeout itself ("timed out after …"); the pod's
		// deadline is the backstop, with room for fetching the app and reporting.
		d := int64(t) + deadlineMargin
		pod.Spec.ActiveDeadlineSeconds = &d
	}
	if tmplErr == nil && !e.cfg.TemplateHostAccess {
		tmplErr = checkHostAccess(tmpl)
	}
	if tmplErr == nil {
		tmplErr = ApplyPodTemplate(pod, tmpl)
	}
	if tmplErr == nil {
		tmplErr = e.checkAccount(pod, tmpl)
	}
	if tmplErr == nil {
		tmplErr = checkOwnNamespace(pod, td.Job, e.cfg.SchedulerAccount)
	}
	if e.cfg.Binding == BindingKubeScheduler && ps.node != "" {
		pin(pod, ps.node)
	}
	return pod, tmplErr
}

// podEnv is the executor's environment: the task, how to report, the
// sandbox and the memory limit, then the configured extra variables.
func (e *podMaker) podEnv(ps podSpec, data []byte, mem float64) []corev1.EnvVar {
	l := ps.launch
	env := []corev1.EnvVar{
		{Name: EnvTaskID, Value: l.TaskID},
		{Name: EnvTaskData, Value: string(data)},
		{Name: EnvReportURLs, Value: strings.Join(e.cfg.SchedulerURLs, ",")},
		{Name: EnvToken, Value: ps.token},
		{Name: EnvExecutorID, Value: l.Executor.ID},
		{Name: EnvNode, Value: ps.node},
		{Name: EnvSandbox, Value: sandboxPath},
		{Name: EnvMemLimit, Value: strconv.FormatInt(memMiB(mem), 10)},
	}
	for _, k := range sortedKeys(e.cfg.ExecutorEnv) {
		env = append(env, corev1.EnvVar{Name: k, Value: e.cfg.ExecutorEnv[k]})
	}
	return env
}

// podSandbox is the task container's image, command and file system.
type podSandbox struct {
	image        string
	command      []string
	inits        []corev1.Container
	mounts       []corev1.VolumeMount
	volumes      []corev1.Volume
	readOnlyRoot bool
}

// sandbox lays out the task container: the sandbox is an emptyDir; the
// executor image's root file system is read-only (security.go) with an
// emptyDir /tmp, and an app's own image (appImage) gets the executor
// copied into the sandbox first by an init container.
func (e *podMaker) sandbox(appImage string, res corev1.ResourceList) podSandbox {
	sb := podSandbox{
		image: e.cfg.ExecutorImage, command: []string{ExecutorInImage, "pod"},
		mounts:       []corev1.VolumeMount{{Name: sandboxVolume, MountPath: sandboxPath}},
		volumes:      []corev1.Volume{{Name: sandboxVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		readOnlyRoot: appImage == "",
	}
	if sb.readOnlyRoot {
		sb.mounts = append(sb.mounts, corev1.VolumeMount{Name: tmpVolume, MountPath: "/tmp"})
		sb.volumes = append(sb.volumes, corev1.Volume{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		return sb
	}
	sb.image, sb.command = appImage, []string{executorCopy, "pod"}
	sb.inits = append(sb.inits, corev1.Container{
		Name: "install-executor", Image: e.cfg.ExecutorImage, ImagePullPolicy: e.cfg.PullPolicy,
		Command:         []string{ExecutorInImage, "install", executorCopy},
		Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
		VolumeMounts:    sb.mounts,
		SecurityContext: containerSecurity(true),
	})
	return sb
}

// deadlineMargin is added to a job's timeoutSeconds for the pod's activeDeadlineSeconds.
const deadlineMargin = 30

// cpuQuantity rounds up to a millicore; memQuantity to a MiB.
func cpuQuantity(cpus float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Ceil(cpus*1000-1e-6)), resource.DecimalSI)
}

func memMiB(mb float64) int64 { return int64(math.Ceil(mb - 1e-9)) }

func memQuantity(mb float64) resource.Quantity {
	return *resource.NewQuantity(memMiB(mb)<<20, resource.BinarySI)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// podName is ej-<job>-<shard>-<hash of the task id>, a DNS label (≤ 63).
func podName(job string, item int, taskID string) string {
	j := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(job), "-"), "-")
	if len(j) > 36 {
		j = strings.TrimRight(j[:36], "-")
	}
	if j == "" {
		j = "job"
	}
	sum := sha256.Sum256([]byte(taskID))
	return fmt.Sprintf("ej-%s-%d-%s", j, item, hex.EncodeToString(sum[:])[:10])
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes a name a label value: at most 63 of [A-Za-z0-9._-], starting and ending
// alphanumeric; a name that does not fit is cut and given a hash suffix.
func labelValue(s string) string {
	v := unsafeLabel.ReplaceAllString(s, "_")
	if len(v) > 63 || v != s {
		sum := sha256.Sum256([]byte(s))
		v = v[:min(len(v), 52)] + "-" + hex.EncodeToString(sum[:])[:10]
	}
	return strings.Trim(v, "._-")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
