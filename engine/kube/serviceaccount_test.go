package kube

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
)

// A team whose pods run in the scheduler's own Kubernetes namespace (the default
// namespace's, with the shipped manifests) names the scheduler's service account in its
// podTemplate, and mounts its token: the pod would create and read pods in every team's
// namespace. Refused, even with kube_pod_template_host_access; an account of the same
// name in another namespace is another account.
func TestHostilePodTemplateTakesTheSchedulersAccount(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.pods.cfg.SchedulerAccount = "ns/elasticjob-scheduler"
	e.pods.cfg.TemplateHostAccess = true
	job := jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}
	hostile := map[string]string{
		"podTemplate.spec.serviceAccountName":  `{"spec":{"serviceAccountName":"elasticjob-scheduler","automountServiceAccountToken":true}}`,
		"podTemplate.spec.serviceAccountName ": `{"spec":{"serviceAccountName":"elasticjob-scheduler","volumes":[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"token"}}]}}]}}`,
	}
	for want, tmpl := range hostile {
		for _, inJob := range []bool{false, true} {
			a, j := app.Config{AppName: "a"}, job
			if inJob {
				j.PodTemplate = app.PodTemplate(tmpl)
			} else {
				a.PodTemplate = app.PodTemplate(tmpl)
			}
			if _, err := testPod(t, e, a, j); err == nil || !strings.Contains(err.Error(), strings.TrimSpace(want)) ||
				!strings.Contains(err.Error(), "ns/elasticjob-scheduler") {
				t.Errorf("template %s (in the job: %v): %v, want refused naming %s", tmpl, inJob, err, want)
			}
		}
	}

	// A scheduler run as its namespace's default account, its tasks too: they run, never
	// with its token.
	e.pods.cfg.SchedulerAccount = "ns/default"
	if _, err := testPod(t, e, app.Config{AppName: "a"}, job); err != nil {
		t.Fatalf("a pod without the token: %v", err)
	}
	for want, tmpl := range map[string]string{
		"automountServiceAccountToken":  `{"spec":{"automountServiceAccountToken":true}}`,
		"projected.serviceAccountToken": `{"spec":{"volumes":[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"token"}}]}}]}}`,
	} {
		if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(tmpl)}, job); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("template %s: %v, want refused naming %s", tmpl, err, want)
		}
	}

	// Another namespace's account of that name, and another account of this namespace.
	e.pods.cfg.SchedulerAccount = "elasticjob/elasticjob-scheduler"
	if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(`{"spec":{"serviceAccountName":"elasticjob-scheduler","automountServiceAccountToken":true}}`)}, job); err != nil {
		t.Fatalf("an account of the same name in the task's own namespace: %v", err)
	}
	e.pods.cfg.SchedulerAccount = "ns/elasticjob-scheduler"
	if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(`{"spec":{"serviceAccountName":"pay-batch","automountServiceAccountToken":true}}`)}, job); err != nil {
		t.Fatalf("a team's own account: %v", err)
	}
}

func TestTokenAccount(t *testing.T) {
	jwt := func(payload string) string {
		return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig"
	}
	for tok, want := range map[string]string{
		jwt(`{"sub":"system:serviceaccount:elasticjob:elasticjob-scheduler"}`): "elasticjob/elasticjob-scheduler",
		jwt(`{"sub":"alice"}`):                            "",
		jwt(`{"sub":"system:serviceaccount:elasticjob"}`): "",
		"not-a-jwt": "",
		"":          "",
	} {
		if got := tokenAccount(&rest.Config{BearerToken: tok}); got != want {
			t.Errorf("token %q: %q, want %q", tok, got, want)
		}
	}
}

// A team whose pods run in the scheduler's own Kubernetes namespace (the default namespace's,
// with the shipped manifests) reads what the scheduler keeps there: the Secret holding the
// admin password (elasticjob-scheduler's auth_password), by its job's kubernetesSecret
// entries or a template's env, envFrom, secret or projected volume, or the data volume (the
// registry, the secrets key) by its claim, an ephemeral clone of it or a CSI driver. Refused,
// at launch and at registration, even with kube_pod_template_host_access; the same pod in a
// team's own Kubernetes namespace, and configMaps and emptyDirs in the scheduler's, run.
func TestHostilePodTemplateReadsTheSchedulersSecrets(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.pods.cfg.SchedulerAccount = "ns/elasticjob-scheduler"
	e.pods.cfg.TemplateHostAccess = true
	job := jobs.Config{JobName: "j", AppName: "a", ShardingTotalCount: 1}
	hostile := map[string]string{
		"env ADMIN valueFrom.secretKeyRef":             `{"spec":{"containers":[{"name":"task","env":[{"name":"ADMIN","valueFrom":{"secretKeyRef":{"name":"elasticjob-scheduler","key":"auth_password"}}}]}]}}`,
		"envFrom.secretRef":                            `{"spec":{"containers":[{"name":"task","envFrom":[{"secretRef":{"name":"elasticjob-scheduler"}}]}]}}`,
		`volumes[2] ("s").secret`:                      `{"spec":{"volumes":[{"name":"s","secret":{"secretName":"elasticjob-scheduler"}}]}}`,
		`volumes[2] ("p").projected.sources[1].secret`: `{"spec":{"volumes":[{"name":"p","projected":{"sources":[{"configMap":{"name":"c"}},{"secret":{"name":"elasticjob-scheduler"}}]}}]}}`,
		`volumes[2] ("d").persistentVolumeClaim`:       `{"spec":{"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"elasticjob-data"}}]}}`,
		`volumes[2] ("e")`:                             `{"spec":{"volumes":[{"name":"e","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],"dataSource":{"kind":"PersistentVolumeClaim","name":"elasticjob-data"}}}}}]}}`,
		`volumes[2] ("c")`:                             `{"spec":{"volumes":[{"name":"c","csi":{"driver":"secrets-store.csi.k8s.io","nodePublishSecretRef":{"name":"elasticjob-scheduler"}}}]}}`,
		`volumes[2] ("f")`:                             `{"spec":{"volumes":[{"name":"f","cephfs":{"monitors":["m:6789"],"secretRef":{"name":"elasticjob-scheduler"}}}]}}`,
	}
	for want, tmpl := range hostile {
		for _, inJob := range []bool{false, true} {
			a, j := app.Config{AppName: "a"}, job
			if inJob {
				j.PodTemplate = app.PodTemplate(tmpl)
			} else {
				a.PodTemplate = app.PodTemplate(tmpl)
			}
			if _, err := testPod(t, e, a, j); err == nil || !strings.Contains(err.Error(), strings.TrimSpace(want)) ||
				!strings.Contains(err.Error(), "Kubernetes namespace ns, the scheduler's own") {
				t.Errorf("template %s (in the job: %v): %v, want refused naming %s", tmpl, inJob, err, want)
			}
		}
	}
	// The job's own secrets entries, without any template: refused at launch and at
	// registration (the dry run builds the pod without asking the API server).
	secretJob := job
	secretJob.Secrets = []jobs.SecretRef{{KubernetesSecret: "elasticjob-scheduler", Key: "auth_password", Env: "ADMIN"}}
	if _, err := testPod(t, e, app.Config{AppName: "a"}, secretJob); err == nil || !strings.Contains(err.Error(), "secrets[0].kubernetesSecret") {
		t.Errorf("a job's kubernetesSecret entry: %v, want refused naming secrets[0].kubernetesSecret", err)
	}
	if err := e.DryRunPod(t.Context(), app.Config{AppName: "a"}, &secretJob); err == nil || !errors.Is(err, ErrPodTemplate) ||
		!strings.Contains(err.Error(), "secrets[0].kubernetesSecret") {
		t.Errorf("registration of a job naming the scheduler's Secret: %v, want refused", err)
	}

	// What the scheduler's namespace holds that is no secret, and the same hostile templates
	// where the scheduler is not (its account in another namespace, or unknown).
	for _, tmpl := range []string{
		`{"spec":{"volumes":[{"name":"c","configMap":{"name":"settings"}},{"name":"w","emptyDir":{}},{"name":"d","downwardAPI":{"items":[{"path":"l","fieldRef":{"fieldPath":"metadata.labels"}}]}}]}}`,
		`{"spec":{"volumes":[{"name":"p","projected":{"sources":[{"configMap":{"name":"c"}}]}}]}}`,
	} {
		if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(tmpl)}, job); err != nil {
			t.Errorf("template %s: %v, want it to run", tmpl, err)
		}
	}
	for _, own := range []string{"elsewhere/elasticjob-scheduler", ""} {
		e.pods.cfg.SchedulerAccount = own
		for _, tmpl := range hostile {
			if _, err := testPod(t, e, app.Config{AppName: "a", PodTemplate: app.PodTemplate(tmpl)}, job); err != nil {
				t.Errorf("scheduler account %q, template %s: %v, want it to run in the team's namespace", own, tmpl, err)
			}
		}
		if _, err := testPod(t, e, app.Config{AppName: "a"}, secretJob); err != nil {
			t.Errorf("scheduler account %q, a job's kubernetesSecret: %v", own, err)
		}
	}
}
