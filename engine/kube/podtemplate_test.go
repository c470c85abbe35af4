package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"k8s.io/client-go/kubernetes/fake"
)

const appTemplate = `{"metadata":{"labels":{"team":"pay","tier":"batch"},"annotations":{"owner":"pay@example.com"}},
 "spec":{"serviceAccountName":"app-sa","nodeSelector":{"disk":"ssd"},"priorityClassName":"batch-low",
  "tolerations":[{"key":"spot","operator":"Exists"}],"imagePullSecrets":[{"name":"regcred"}],
  "securityContext":{"runAsNonRoot":true,"runAsUser":1000},
  "volumes":[{"name":"conf","configMap":{"name":"pay-conf"}},{"name":"data","persistentVolumeClaim":{"claimName":"pay-data"}}],
  "containers":[{"name":"task","env":[{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"pay-db","key":"password"}}},{"name":"MODE","value":"app"}],
   "envFrom":[{"configMapRef":{"name":"pay-env"}}],
   "volumeMounts":[{"name":"conf","mountPath":"/etc/pay"},{"name":"data","mountPath":"/data"}]}]}}`

const jobTemplate = `{"metadata":{"labels":{"tier":"nightly"}},
 "spec":{"serviceAccountName":"job-sa","tolerations":[{"key":"night","operator":"Exists"}],
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},
  "volumes":[{"name":"scratch","emptyDir":{}}],
  "containers":[{"name":"task","env":[{"name":"MODE","value":"job"}],"volumeMounts":[{"name":"scratch","mountPath":"/scratch"}],
   "securityContext":{"readOnlyRootFilesystem":true}}]}}`

func testPod(t *testing.T, e *Engine, a app.Config, j jobs.Config) (*corev1.Pod, error) {
	t.Helper()
	tid := jobs.NewTaskID(j.JobName, 0, jobs.KindReady, "n1").String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: j.JobName, TaskID: tid, ShardingTotalCount: 1}, Job: j, App: a}
	l := engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.5, MemMB: 64, Task: td,
		Executor: engine.ExecutorSpec{ID: jobs.ExecutorID(a.AppName, "n1"), CPUs: 0.1, MemMB: 32}}
	return e.pods.build(podSpec{launch: l, node: "n1", shareCPUs: 0.1, shareMem: 32, token: "tok"})
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// TestPodTemplateMerge: the job's template over the app's (strategic merge), merged under
// the scheduler's own fields, which stay as the scheduler built them.
func TestPodTemplateMerge(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.cfg.NodeSelector = map[string]string{"pool": "jobs"}
	e.cfg.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	e.cfg.ServiceAccount = "scheduler-default"
	a := app.Config{AppName: "pay", ContainerImage: "registry.example.com/pay:1", PodTemplate: app.PodTemplate(appTemplate)}
	j := jobs.Config{JobName: "nightly", AppName: "pay", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, TimeoutSeconds: 60,
		PodTemplate: app.PodTemplate(jobTemplate)}
	p, err := testPod(t, e, a, j)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	if s.NodeName != "n1" || s.RestartPolicy != corev1.RestartPolicyNever || s.ActiveDeadlineSeconds == nil || len(s.InitContainers) != 1 {
		t.Errorf("scheduler fields lost: node %q restart %q deadline %v inits %d", s.NodeName, s.RestartPolicy, s.ActiveDeadlineSeconds, len(s.InitContainers))
	}
	if s.ServiceAccountName != "job-sa" || s.PriorityClassName != "batch-low" || s.Affinity == nil || s.SecurityContext == nil || *s.SecurityContext.RunAsUser != 1000 {
		t.Errorf("pod settings: sa %q priority %q affinity %v security %+v", s.ServiceAccountName, s.PriorityClassName, s.Affinity, s.SecurityContext)
	}
	if s.NodeSelector["disk"] != "ssd" || s.NodeSelector["pool"] != "jobs" {
		t.Errorf("node selector %v", s.NodeSelector)
	}
	var tols []string
	for _, tol := range s.Tolerations {
		tols = append(tols, tol.Key)
	}
	if strings.Join(tols, ",") != "dedicated,night" { // the job's list replaces the app's; the scheduler's kept
		t.Errorf("tolerations %v", tols)
	}
	if len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("image pull secrets %v", s.ImagePullSecrets)
	}
	var vols []string
	for _, v := range s.Volumes {
		vols = append(vols, v.Name)
	}
	if strings.Join(vols, ",") != "sandbox,scratch,conf,data" {
		t.Errorf("volumes %v", vols)
	}
	if len(s.Containers) != 1 {
		t.Fatalf("containers %d", len(s.Containers))
	}
	c := s.Containers[0]
	if c.Image != "registry.example.com/pay:1" || c.Resources.Limits.Cpu().MilliValue() != 600 {
		t.Errorf("task container image %q limits %v", c.Image, c.Resources.Limits)
	}
	env := envOf(c)
	if env["MODE"].Value != "job" || env["DB_PASSWORD"].ValueFrom == nil || env[EnvTaskID].Value == "" || env[EnvToken].Value != "tok" {
		t.Errorf("env %+v", env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "pay-env" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	if strings.Join(mounts, ",") != sandboxPath+",/scratch,/etc/pay,/data" {
		t.Errorf("mounts %v", mounts)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	if p.Labels["team"] != "pay" || p.Labels["tier"] != "nightly" || p.Labels[LabelJob] != "nightly" || p.Annotations["owner"] == "" || p.Annotations[AnnotationTask] == "" {
		t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
	}
	td, err := jobs.UnmarshalTaskData([]byte(env[EnvTaskData].Value))
	if err != nil || !td.App.PodTemplate.Empty() || !td.Job.PodTemplate.Empty() {
		t.Errorf("the pod's task data carries the templates (%v)", err)
	}
}

// TestPodTemplateNoneKeepsThePod: without templates the pod is what it was (its two
// volumes the sandbox and /tmp, security.go).
func TestPodTemplateNoneKeepsThePod(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.cfg.ServiceAccount = "sa"
	p, err := testPod(t, e, app.Config{AppName: "a"}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1})
	if err != nil || p.Spec.ServiceAccountName != "sa" || len(p.Spec.Volumes) != 2 || len(p.Spec.Containers[0].Env) != 8 {
		t.Fatalf("%v %+v", err, p.Spec)
	}
}

// TestPodTemplateConflicts: each field the scheduler owns, and each the merge does not
// support, is refused with its name.
func TestPodTemplateConflicts(t *testing.T) {
	cases := []struct{ template, field string }{
		{`{"spec":{"nodeName":"n2"}}`, "podTemplate.spec.nodeName"},
		{`{"spec":{"restartPolicy":"OnFailure"}}`, "podTemplate.spec.restartPolicy"},
		{`{"spec":{"activeDeadlineSeconds":5}}`, "podTemplate.spec.activeDeadlineSeconds"},
		{`{"spec":{"schedulingGates":[{"name":"kueue"}]}}`, "podTemplate.spec.schedulingGates"},
		{`{"spec":{"initContainers":[{"name":"x","image":"busybox"}]}}`, "podTemplate.spec.initContainers"},
		{`{"spec":{"containers":[{"name":"sidecar","image":"envoy"}]}}`, `podTemplate.spec.containers[0] ("sidecar")`},
		{`{"spec":{"containers":[{"name":"task","image":"other"}]}}`, "podTemplate.spec.containers[task].image"},
		{`{"spec":{"containers":[{"name":"task","resources":{"limits":{"cpu":"4"}}}]}}`, "podTemplate.spec.containers[task].resources"},
		{`{"spec":{"containers":[{"name":"task","command":["sh"]}]}}`, "podTemplate.spec.containers[task].command"},
		{`{"spec":{"containers":[{"name":"task","env":[{"name":"ELASTICJOB_TASK_ID","value":"x"}]}]}}`, `podTemplate.spec.containers[task].env["ELASTICJOB_TASK_ID"]`},
		{`{"spec":{"containers":[{"name":"task","env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`, `podTemplate.spec.containers[task].env["DB_PASSWORD"]`},
		{`{"spec":{"containers":[{"name":"task","volumeMounts":[{"name":"x","mountPath":"/elasticjob/bin"}]}]}}`, "podTemplate.spec.containers[task].volumeMounts[0]"},
		{`{"spec":{"volumes":[{"name":"sandbox","emptyDir":{}}]}}`, `podTemplate.spec.volumes[0] ("sandbox")`},
		{`{"spec":{"nodeSelector":{"pool":"other"}}}`, `podTemplate.spec.nodeSelector["pool"]`},
		{`{"metadata":{"labels":{"elasticjob.io/job":"x"}}}`, `podTemplate.metadata.labels["elasticjob.io/job"]`},
		{`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"me"}}}`, `podTemplate.metadata.labels["app.kubernetes.io/managed-by"]`},
		{`{"metadata":{"annotations":{"elasticjob.io/task-id":"x"}}}`, `podTemplate.metadata.annotations["elasticjob.io/task-id"]`},
		{`{"metadata":{"name":"fixed"}}`, "podTemplate.metadata.name"},
		{`{"spec":{"hostNetwork":true}}`, "podTemplate.spec.hostNetwork"},
	}
	e := testEngine(clock.NewFake(t0))
	e.cfg.NodeSelector = map[string]string{"pool": "jobs"}
	for _, tc := range cases {
		_, err := testPod(t, e, app.Config{AppName: "a"}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1, PodTemplate: app.PodTemplate(tc.template)})
		if !errors.Is(err, ErrPodTemplate) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming %s", tc.template, err, tc.field)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	// Allowed: restartPolicy Never and a hostNetwork equal to the scheduler's; a literal
	// value for a harmless name.
	for _, ok := range []string{`{"spec":{"restartPolicy":"Never"}}`, `{"spec":{"hostNetwork":false}}`,
		`{"spec":{"containers":[{"name":"task","env":[{"name":"LOG_LEVEL","value":"debug"}]}]}}`} {
		if _, err := testPod(t, e, app.Config{AppName: "a"}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1, PodTemplate: app.PodTemplate(ok)}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestPodTemplateNotAPodTemplate: unknown fields and wrong types are refused, naming whose.
func TestPodTemplateNotAPodTemplate(t *testing.T) {
	for _, tc := range []struct{ app, job, want string }{
		{`{"spec":{"serviceAcount":"x"}}`, "", `the app's podTemplate is not a Kubernetes PodTemplateSpec: json: unknown field "serviceAcount"`},
		{"", `{"spec":{"tolerations":"all"}}`, "the job's podTemplate is not a Kubernetes PodTemplateSpec"},
	} {
		_, err := MergePodTemplates(app.PodTemplate(tc.app), app.PodTemplate(tc.job))
		if !errors.Is(err, ErrPodTemplate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// TestPrepareDropsABadTemplate: a template that no longer fits (the scheduler's node
// selector changed since registration) drops that task with the reason; no pod is created.
func TestPrepareDropsABadTemplate(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.cfg.NodeSelector = map[string]string{"pool": "jobs"}
	n := node("n1", "2", "4Gi", false)
	n.Labels = map[string]string{"pool": "jobs"}
	e.onNode(n)
	off := offered(e)[0]
	tid := jobs.NewTaskID("j", 0, jobs.KindReady, "n1").String()
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j", TaskID: tid, ShardingTotalCount: 1},
		Job: jobs.Config{JobName: "j", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, PodTemplate: app.PodTemplate(`{"spec":{"nodeSelector":{"pool":"x"}}}`)},
		App: app.Config{AppName: "a"}}
	l := engine.TaskLaunch{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td, Executor: engine.ExecutorSpec{ID: "e", CPUs: 0.1, MemMB: 32}}
	err := e.Accept(context.Background(), []string{off.ID}, []engine.TaskLaunch{l}, -1)
	if err == nil || !strings.Contains(err.Error(), `podTemplate.spec.nodeSelector["pool"]`) {
		t.Fatalf("accept: %v", err)
	}
	pods, _ := e.cfg.Client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created", len(pods.Items))
	}
}

// TestDryRunPod: the pod is sent with dryRun=All, the API server's refusal becomes a
// template error, and nothing is asked without a template.
func TestDryRunPod(t *testing.T) {
	cs := fake.NewClientset()
	var dry [][]string
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		dry = append(dry, ca.CreateOptions.DryRun)
		p := ca.Object.(*corev1.Pod)
		if p.Spec.PriorityClassName == "missing" {
			return true, nil, errForbidden("no PriorityClass with name missing was found")
		}
		return true, p, nil
	})
	e := testEngine(clock.NewFake(t0))
	e.cfg.Client = cs
	a := app.Config{AppName: "a", CPUCount: 1, MemoryMB: 64}
	j := jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 2, CPUCount: 1, MemoryMB: 64}
	if err := e.DryRunPod(context.Background(), a, &j); err != nil || len(dry) != 0 {
		t.Fatalf("no template: %v, %d calls", err, len(dry))
	}
	j.PodTemplate = app.PodTemplate(`{"spec":{"priorityClassName":"batch"}}`)
	if err := e.DryRunPod(context.Background(), a, &j); err != nil || len(dry) != 1 || len(dry[0]) != 1 || dry[0][0] != metav1.DryRunAll {
		t.Fatalf("good template: %v, dry runs %v", err, dry)
	}
	a.PodTemplate = app.PodTemplate(`{"spec":{"priorityClassName":"missing"}}`)
	err := e.DryRunPod(context.Background(), a, nil)
	if !errors.Is(err, ErrPodTemplate) || !strings.Contains(err.Error(), "no PriorityClass with name missing was found") {
		t.Fatalf("refused: %v", err)
	}
}

func errForbidden(msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New(msg))
}
