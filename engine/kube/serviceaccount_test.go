package kube

import (
	"encoding/base64"
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
