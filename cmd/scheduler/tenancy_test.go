package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

func TestDecideTenancy(t *testing.T) {
	ok := func(embedded.Config) error { return nil }
	notRoot := func(embedded.Config) error { return errors.New("not root") }
	var seen embedded.Config
	spy := func(c embedded.Config) error { seen = c; return nil }

	cfg := settings(t, map[string]string{"secrets_key_file": "/etc/ej/key", "tenant_uid_range": "200000-200099"})
	ti, ten := decideTenancy(cfg, spy)
	if ti.Mode != api.TenantIsolationOn || ten == nil || ten.UIDs.Lo != 200000 || seen.Tenancy != ten {
		t.Fatalf("root: %+v %+v", ti, ten)
	}
	abs, _ := filepath.Abs(cfg.DataDir)
	if strings.Join(ten.Hide, ",") != abs+",/etc/ej/key" || ten.CacheDir != filepath.Join(abs, "cache") ||
		ten.Init != cfg.ExecutorPath || ten.ReadOnly[0] != filepath.Dir(cfg.ExecutorPath) {
		t.Errorf("tenancy: %+v", ten)
	}
	if got := ten.Of("", execInfo("pay~etl@-@agent-S0")); got != "pay" {
		t.Errorf("tenant of pay's executor: %q", got)
	}
	if got := ten.Of("", execInfo("etl@-@agent-S0")); got != namespace.Default {
		t.Errorf("tenant of default's executor: %q", got)
	}
	if ti, ten := decideTenancy(cfg, notRoot); ti.Mode != api.TenantIsolationUnavailable || ti.Reason != "not root" || ten != nil {
		t.Errorf("not root: %+v %v", ti, ten)
	}
	for kv, want := range map[[2]string]string{
		{"tenant_isolation", "off"}:       api.TenantIsolationOff,
		{"mesos_url", "http://m:5050"}:    api.TenantIsolationEngine,
		{"tenant_isolation", "on"}:        api.TenantIsolationOn,
		{"tenant_isolation", "auto"}:      api.TenantIsolationOn,
		{"executor_path", "/nonexistent"}: api.TenantIsolationOn, // check decides
	} {
		if ti, _ := decideTenancy(settings(t, map[string]string{kv[0]: kv[1]}), ok); ti.Mode != want {
			t.Errorf("%s=%s: %+v, want %s", kv[0], kv[1], ti, want)
		}
	}
}

func TestEnforceTenancy(t *testing.T) {
	ctx := context.Background()
	unavailable := api.TenantIsolation{Mode: api.TenantIsolationUnavailable, Reason: "not root"}
	reg := registry.New(memory.New())
	desk := settings(t, nil)
	if err := enforceTenancy(ctx, desk, unavailable, reg, quiet); err != nil {
		t.Fatalf("one namespace, no key, not root: %v", err)
	}
	key := settings(t, map[string]string{"secrets_key_file": "/k"})
	if err := enforceTenancy(ctx, key, unavailable, reg, quiet); err == nil || !strings.Contains(err.Error(), "tenant_isolation=off") {
		t.Fatalf("a key without isolation: %v", err)
	}
	if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	if err := enforceTenancy(ctx, desk, unavailable, reg, quiet); err == nil || !strings.Contains(err.Error(), "2 namespaces") {
		t.Fatalf("two namespaces without isolation: %v", err)
	}
	if err := enforceTenancy(ctx, key, api.TenantIsolation{Mode: api.TenantIsolationOff}, reg, quiet); err != nil {
		t.Fatalf("tenant_isolation=off: %v", err)
	}
	on := settings(t, map[string]string{"tenant_isolation": "on"})
	if err := enforceTenancy(ctx, on, unavailable, registry.New(memory.New()), quiet); err == nil {
		t.Fatal("tenant_isolation=on where it is unavailable started")
	}
}

func TestSecureFiles(t *testing.T) {
	cfg := settings(t, nil)
	cfg.SecretsKeyFile = filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(cfg.SecretsKeyFile, []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := secureFiles(cfg, quiet); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{cfg.DataDir: 0o700, cfg.SecretsKeyFile: 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", p, st.Mode(), err, want)
		}
	}
}

func execInfo(id string) mesoslib.ExecutorInfo {
	return mesoslib.ExecutorInfo{ExecutorID: mesoslib.ExecutorID{Value: id}}
}
