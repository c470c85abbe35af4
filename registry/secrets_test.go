package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// Secrets are the namespace's: a new name is created once, an overwrite
// needs the version read, a namespace gone takes them along and a
// deleted namespace takes no new one.
func TestSecretsOfANamespace(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(memory.New())
	if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	s := secrets.Sealed{Meta: secrets.Meta{Namespace: "pay", Name: "db", Version: 1}, Ciphertext: []byte{1}}
	if err := reg.Tenancy().PutSecret(ctx, s, registry.NewSecret); err != nil {
		t.Fatal(err)
	}
	if err := reg.Tenancy().PutSecret(ctx, s, registry.NewSecret); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second create: %v", err)
	}
	_, v, err := reg.Tenancy().Secret(ctx, "pay", "db")
	if err != nil {
		t.Fatal(err)
	}
	s.Version = 2
	if err := reg.Tenancy().PutSecret(ctx, s, v); err != nil {
		t.Fatal(err)
	}
	if err := reg.Tenancy().PutSecret(ctx, s, v); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an overwrite with a stale version: %v", err)
	}
	if list, _ := reg.Tenancy().Secrets(ctx, "search"); len(list) != 0 {
		t.Fatalf("search lists %v", list)
	}
	if err := reg.Tenancy().DeleteNamespace(ctx, "pay"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.Tenancy().Secret(ctx, "pay", "db"); !errors.Is(err, registry.ErrSecretNotFound) {
		t.Fatalf("pay's secret outlived pay: %v", err)
	}
	if err := reg.Tenancy().PutSecret(ctx, s, registry.NewSecret); err == nil {
		t.Fatal("a secret stored into a deleted namespace")
	}
}
