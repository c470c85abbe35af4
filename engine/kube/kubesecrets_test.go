package kube

import (
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
)

// A job's Kubernetes Secret entries reach its pod by reference: env as secretKeyRef, files as
// one read-only secret volume per Secret with the keys named, under jobs.KubeSecretsMount;
// the scheduler's own secrets add nothing to the pod (the executor fetches them).
func TestKubeSecretsInThePod(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	j := jobs.Config{JobName: "nightly", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, Secrets: []jobs.SecretRef{
		{Name: "own", Env: "OWN"},
		{KubernetesSecret: "pay-db", Key: "password", Env: "DB_PW"},
		{KubernetesSecret: "pay-db", Key: "user", File: "db/user"},
		{KubernetesSecret: "tls", Key: "tls.key", File: "tls.key"},
	}}
	p, err := testPod(t, e, app.Config{AppName: "a"}, j)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Spec.Containers[0]
	var found bool
	for _, v := range c.Env {
		if v.Name == "OWN" {
			t.Errorf("the scheduler's secret is in the pod's env: %+v", v)
		}
		if v.Name == "DB_PW" {
			found = v.Value == "" && v.ValueFrom != nil && v.ValueFrom.SecretKeyRef.Name == "pay-db" && v.ValueFrom.SecretKeyRef.Key == "password"
		}
	}
	if !found {
		t.Errorf("no secretKeyRef DB_PW in %+v", c.Env)
	}
	vols := map[string][]string{}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				vols[v.Secret.SecretName] = append(vols[v.Secret.SecretName], it.Key+"→"+it.Path)
			}
		}
	}
	if len(vols) != 2 || len(vols["pay-db"]) != 1 || vols["pay-db"][0] != "user→user" || vols["tls"][0] != "tls.key→tls.key" {
		t.Errorf("secret volumes %v", vols)
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.ReadOnly
	}
	if !mounts[jobs.KubeSecretsMount+"/pay-db"] || !mounts[jobs.KubeSecretsMount+"/tls"] {
		t.Errorf("mounts %v", mounts)
	}
	if jobs.KubeSecretPath("tls", "tls.key") != jobs.KubeSecretsMount+"/tls/tls.key" {
		t.Error("KubeSecretPath")
	}
}
