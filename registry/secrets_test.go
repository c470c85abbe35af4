package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
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

// A deleted job takes its shards' secret-fetch records along, through
// either view: a job registered again under the name starts with none,
// and another namespace's job of the same name keeps its own.
func TestSecretFetchesGoWithTheirJob(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	reg := registry.New(kv)
	for _, ns := range []string{"pay", "search"} {
		if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/a.tgz", "bin/start.sh"
		if err := reg.In(ns).Config().AddApp(ctx, a); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron = "nightly", "etl", "0 0 * * * ?"
		if err := reg.In(ns).Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		for item := range 2 {
			if first, err := reg.Tenancy().ConsumeSecretFetch(ctx, ns+"~nightly", item, ns+"-task"); !first || err != nil {
				t.Fatalf("%s's fetch %d: %v %v", ns, item, first, err)
			}
		}
	}
	if err := reg.In("pay").Config().DeleteJob(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if kids, err := kv.Children(ctx, "/secret-fetches/pay~nightly"); len(kids) != 0 || !errors.Is(err, store.ErrNotFound) && err != nil {
		t.Fatalf("pay's deleted job left its fetch records: %v %v", kids, err)
	}
	if kids, _ := kv.Children(ctx, "/secret-fetches/search~nightly"); len(kids) != 2 {
		t.Fatalf("search's job lost its fetch records: %v", kids)
	}
	if err := reg.Config().DeleteJob(ctx, "search~nightly"); err != nil { // the scheduler's view
		t.Fatal(err)
	}
	if kids, _ := kv.Children(ctx, "/secret-fetches"); len(kids) != 0 {
		t.Fatalf("fetch records left: %v", kids)
	}
}
