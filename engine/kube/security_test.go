package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
)

func checkRestricted(t *testing.T, what string, c *corev1.SecurityContext, readOnlyRoot bool) {
	t.Helper()
	switch {
	case c == nil:
		t.Fatalf("%s: no security context", what)
	case c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation %v", what, c.AllowPrivilegeEscalation)
	case c.Capabilities == nil || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" || len(c.Capabilities.Add) != 0:
		t.Errorf("%s: capabilities %+v", what, c.Capabilities)
	case c.ReadOnlyRootFilesystem == nil || *c.ReadOnlyRootFilesystem != readOnlyRoot:
		t.Errorf("%s: readOnlyRootFilesystem %v, want %v", what, c.ReadOnlyRootFilesystem, readOnlyRoot)
	}
}

func mountsOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		out[m.MountPath] = m.Name
	}
	return out
}

// TestPodSecurityDefaults: a task pod runs as a non-root user (65532 unless
// told otherwise), without privilege escalation or capabilities, with the
// runtime's seccomp profile and no service account token; in the executor
// image its root file system is read-only and the sandbox and /tmp are
// emptyDirs; an app's own image keeps a writable root, its init container
// confined too.
func TestPodSecurityDefaults(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	j := jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}
	p, err := testPod(t, e, app.Config{AppName: "a"}, j)
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != DefaultRunAsUser ||
		sc.RunAsGroup == nil || *sc.RunAsGroup != DefaultRunAsUser || sc.FSGroup == nil || *sc.FSGroup != DefaultRunAsUser ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", sc)
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v", a)
	}
	c := p.Spec.Containers[0]
	checkRestricted(t, "task container", c.SecurityContext, true)
	if m := mountsOf(c); m[sandboxPath] != sandboxVolume || m["/tmp"] != tmpVolume {
		t.Errorf("mounts %v: want the sandbox and /tmp writable", m)
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir", v.Name)
		}
	}

	own, err := testPod(t, e, app.Config{AppName: "a", ContainerImage: "registry.example.com/a:1"}, j)
	if err != nil {
		t.Fatal(err)
	}
	checkRestricted(t, "task container of an app image", own.Spec.Containers[0].SecurityContext, false)
	checkRestricted(t, "install-executor", own.Spec.InitContainers[0].SecurityContext, true)
	if own.Spec.SecurityContext == nil || !*own.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("app image pod security context %+v", own.Spec.SecurityContext)
	}
}

// TestPodSecurityTemplateOverrides: a template's securityContext fields
// override the defaults one by one, the rest stay; a template may ask for
// the service account token.
func TestPodSecurityTemplateOverrides(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	tmpl := `{"spec":{"automountServiceAccountToken":true,"securityContext":{"runAsUser":1000,"fsGroup":2000},
	  "containers":[{"name":"task","securityContext":{"readOnlyRootFilesystem":false,"capabilities":{"drop":["ALL"],"add":["NET_BIND_SERVICE"]}}}]}}`
	p, err := testPod(t, e, app.Config{AppName: "a"},
		jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1, PodTemplate: app.PodTemplate(tmpl)})
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Spec.SecurityContext
	if *sc.RunAsUser != 1000 || *sc.FSGroup != 2000 || !*sc.RunAsNonRoot || *sc.RunAsGroup != DefaultRunAsUser || sc.SeccompProfile == nil {
		t.Errorf("pod security context %+v", sc)
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Errorf("automountServiceAccountToken %v, want the template's true", a)
	}
	c := p.Spec.Containers[0].SecurityContext
	if *c.ReadOnlyRootFilesystem || *c.AllowPrivilegeEscalation || len(c.Capabilities.Add) != 1 {
		t.Errorf("container security context %+v", c)
	}
	// The template's runAsNonRoot: false is honoured too (an image that must run as root).
	root := `{"spec":{"securityContext":{"runAsNonRoot":false,"runAsUser":0}}}`
	p, err = testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(root)}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1})
	if err != nil || *p.Spec.SecurityContext.RunAsNonRoot || *p.Spec.SecurityContext.RunAsUser != 0 {
		t.Fatalf("%v %+v", err, p.Spec.SecurityContext)
	}
}

// TestHostilePodTemplateReachesNoNode: a team sets its apps' and jobs'
// podTemplates, and the scheduler creates the pods with its own rights.
// Every template that would reach the node (its namespaces, its files,
// privilege, capabilities past the baseline's, unconfined profiles,
// unsafe sysctls, a system priority class, which has the kubelet evict
// other teams' pods to make room), in the app's template or the job's, is refused naming
// the field, unless kube_pod_template_host_access lets every team's.
func TestHostilePodTemplateReachesNoNode(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	hostile := map[string]string{
		"spec.hostPID":            `{"spec":{"hostPID":true}}`,
		"spec.hostIPC":            `{"spec":{"hostIPC":true}}`,
		".hostPath":               `{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`,
		".privileged":             `{"spec":{"containers":[{"name":"task","securityContext":{"privileged":true}}]}}`,
		".capabilities.add":       `{"spec":{"containers":[{"name":"task","securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}}`,
		".procMount":              `{"spec":{"containers":[{"name":"task","securityContext":{"procMount":"Unmasked"}}]}}`,
		"c.seccompProfile":        `{"spec":{"containers":[{"name":"task","securityContext":{"seccompProfile":{"type":"Unconfined"}}}]}}`,
		"t.seccompProfile":        `{"spec":{"securityContext":{"seccompProfile":{"type":"Unconfined"}}}}`,
		".appArmorProfile":        `{"spec":{"securityContext":{"appArmorProfile":{"type":"Unconfined"}}}}`,
		".seLinuxOptions":         `{"spec":{"securityContext":{"seLinuxOptions":{"type":"spc_t"}}}}`,
		".hostProcess":            `{"spec":{"containers":[{"name":"task","securityContext":{"windowsOptions":{"hostProcess":true}}}]}}`,
		"sysctls":                 `{"spec":{"securityContext":{"sysctls":[{"name":"kernel.core_pattern","value":"|/tmp/x"}]}}}`,
		"spec.priorityClassName":  `{"spec":{"priorityClassName":"system-node-critical"}}`,
		"cspec.priorityClassName": `{"spec":{"priorityClassName":"system-cluster-critical"}}`,
	}
	for field, tmpl := range hostile {
		for _, inJob := range []bool{false, true} {
			a := app.Config{AppName: "a"}
			j := jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}
			if inJob {
				j.PodTemplate = app.PodTemplate(tmpl)
			} else {
				a.PodTemplate = app.PodTemplate(tmpl)
			}
			_, err := testPod(t, e, a, j)
			want := strings.TrimPrefix(strings.TrimPrefix(field, "c"), "t")
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "kube_pod_template_host_access") {
				t.Errorf("template %s (in the job: %v): %v, want refused naming %s", tmpl, inJob, err, want)
			}
		}
	}
	// What the baseline allows stays: a capability of its list, the runtime's profile.
	ok := `{"spec":{"securityContext":{"seccompProfile":{"type":"RuntimeDefault"},"sysctls":[{"name":"net.ipv4.ping_group_range","value":"0 1"}]},
	  "containers":[{"name":"task","securityContext":{"privileged":false,"capabilities":{"add":["NET_BIND_SERVICE"]}}}]}}`
	if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(ok)}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}); err != nil {
		t.Fatalf("a baseline template: %v", err)
	}
	e.pods.cfg.TemplateHostAccess = true
	for _, tmpl := range hostile {
		if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(tmpl)}, jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}); err != nil {
			t.Errorf("template %s with kube_pod_template_host_access: %v", tmpl, err)
		}
	}
}
