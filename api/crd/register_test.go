package crd

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A URL naming a Service (as deploy/kubernetes sets it) is registered as a
// Service reference, which the API server resolves itself; any other URL as
// it is. Registering the same again writes nothing; a change updates.
func TestRegisterServiceOrURL(t *testing.T) {
	ctx := context.Background()
	ca := []byte("ca")
	for _, tc := range []struct {
		url, ns, name, path string
		port                int32
	}{
		{"https://elasticjob-scheduler.elasticjob.svc:9443", "elasticjob", "elasticjob-scheduler", "/validate", 9443},
		{"https://hook.team-a.svc.cluster.local/check", "team-a", "hook", "/check", 443},
		{"https://127.0.0.1:8443", "", "", "", 0},
		{"https://hooks.example.com:8443/validate", "", "", "", 0},
	} {
		cs := fake.NewClientset()
		full, _, _, err := Endpoint(tc.url, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := Register(ctx, cs, full, ca); err != nil {
			t.Fatal(err)
		}
		got, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, WebhookConfigName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cc := got.Webhooks[0].ClientConfig
		switch {
		case tc.name != "":
			if s := cc.Service; cc.URL != nil || s == nil || s.Namespace != tc.ns || s.Name != tc.name || *s.Port != tc.port || *s.Path != tc.path {
				t.Errorf("%s: client config %+v (service %+v), want service %s/%s:%d%s", tc.url, cc, cc.Service, tc.ns, tc.name, tc.port, tc.path)
			}
		case cc.Service != nil || cc.URL == nil || *cc.URL != full:
			t.Errorf("%s: client config %+v, want the URL %s", tc.url, cc, full)
		}
		before := len(cs.Actions())
		if err := Register(ctx, cs, full, ca); err != nil {
			t.Fatal(err)
		}
		for _, a := range cs.Actions()[before:] {
			if a.GetVerb() != "get" {
				t.Errorf("%s: registering the same again did %s", tc.url, a.GetVerb())
			}
		}
		if err := Register(ctx, cs, full, []byte("another ca")); err != nil {
			t.Fatal(err)
		}
		got, _ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, WebhookConfigName, metav1.GetOptions{})
		if string(got.Webhooks[0].ClientConfig.CABundle) != "another ca" {
			t.Errorf("%s: a new CA was not registered", tc.url)
		}
	}
}
