package crd

import (
	"context"
	"crypto/x509"
	"testing"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

func TestEveryInstanceServesACertificateTheStoredCASigned(t *testing.T) {
	kv := memory.New()
	ctx := context.Background()
	a, err := LoadCA(ctx, registry.New(kv).Term().WebhookCA(), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadCA(ctx, registry.New(kv).Term().WebhookCA(), t0) // another instance, or a restart
	if err != nil {
		t.Fatal(err)
	}
	if string(a.CertPEM) != string(b.CertPEM) {
		t.Fatal("a second load made another CA")
	}
	for _, host := range []string{"127.0.0.1", "elasticjob-scheduler.elasticjob.svc"} {
		cert, err := b.Serving(host, t0)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(a.CertPEM)
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: t0}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

func TestEndpointFollowsTheURL(t *testing.T) {
	for _, c := range []struct{ url, listen, full, host, addr string }{
		{"https://127.0.0.1:9443", "", "https://127.0.0.1:9443/validate", "127.0.0.1", "127.0.0.1:9443"},
		{"https://elasticjob-scheduler.elasticjob.svc:9443/hook", "", "https://elasticjob-scheduler.elasticjob.svc:9443/hook", "elasticjob-scheduler.elasticjob.svc", ":9443"},
		{"https://10.0.0.5", "0.0.0.0:8443", "https://10.0.0.5/validate", "10.0.0.5", "0.0.0.0:8443"},
	} {
		full, host, addr, err := Endpoint(c.url, c.listen)
		if err != nil || full != c.full || host != c.host || addr != c.addr {
			t.Errorf("Endpoint(%q, %q) = %q %q %q %v", c.url, c.listen, full, host, addr, err)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:9443", "127.0.0.1:9443", "https://"} {
		if _, _, _, err := Endpoint(bad, ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
