package jobs

import (
	"errors"
	"testing"
)

func TestKubernetesSecretRefs(t *testing.T) {
	base := func(refs ...SecretRef) Config {
		return Config{JobName: "j", JobType: TypeScript, Secrets: refs}
	}
	ok := base(SecretRef{KubernetesSecret: "pay-db", Key: "password", Env: "DB_PW"}, SecretRef{KubernetesSecret: "tls.certs", Key: "tls.key", File: "tls/key"},
		SecretRef{Name: "own", Env: "OWN"})
	if err := ok.validateSecrets(); err != nil {
		t.Fatal(err)
	}
	if own := ok.OwnSecrets(); len(own) != 1 || own[0] != "own" {
		t.Errorf("own %v", own)
	}
	if k := ok.KubeSecrets(); len(k) != 2 {
		t.Errorf("kube %v", k)
	}
	for _, bad := range []SecretRef{
		{Name: "own", KubernetesSecret: "x", Key: "k", Env: "A"},
		{KubernetesSecret: "Bad_Name", Key: "k", Env: "A"},
		{KubernetesSecret: "x", Env: "A"},
		{KubernetesSecret: "x", Key: "a/b", Env: "A"},
		{KubernetesSecret: "x", Key: "..", Env: "A"},
		{Name: "own", Key: "k", Env: "A"},
		{KubernetesSecret: "x", Key: "k"},
		{KubernetesSecret: "x", Key: "k", Env: "ELASTICJOB_X"},
	} {
		if err := base(bad).validateSecrets(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v accepted (%v)", bad, err)
		}
	}
}
