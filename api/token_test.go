package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// TestTokensAcrossInstances: a token one instance issued is accepted by
// another with the same credentials (and after a restart), refused under
// other credentials or when tampered with, and a logout on one instance is
// seen by the other through the shared registry.
func TestTokensAcrossInstances(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	reg := registry.New(memory.New())
	creds := Credentials{AdminUser: "root", AdminPassword: "s3cret", GuestUser: "g", GuestPassword: "p"}
	a, b := NewAuth(creds, clk, reg.Tenancy()), NewAuth(creds, clk, reg.Tenancy())
	tok, p, _, err := a.Login("g", "p")
	if err != nil || p.Kind != string(RoleGuest) {
		t.Fatal(p, err)
	}
	if cl, err := b.verify(tok); err != nil || cl.Role != RoleGuest || cl.User != "g" {
		t.Fatalf("other instance: %+v %v", cl, err)
	}
	other := NewAuth(Credentials{AdminUser: "root", AdminPassword: "changed"}, clk, reg.Tenancy())
	if _, err := other.verify(tok); err == nil {
		t.Fatal("accepted under another password")
	}
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + parts[1] + "x." + parts[2]
	if _, err := b.verify(forged); err == nil {
		t.Fatal("accepted a tampered token")
	}
	if _, err := b.verify("ej1.e30.AAAA"); err == nil {
		t.Fatal("accepted a made-up token")
	}
	if err := a.Logout(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	cl, _ := b.verify(tok)
	if gone, err := reg.Tenancy().Revoked(context.Background(), cl.ID); err != nil || !gone {
		t.Fatalf("logout not recorded: %v %v", gone, err)
	}
}
