package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
)

// decideTenancy says how the namespaces' tasks are kept apart where they
// run (docs/tenancy.md) and, when the embedded agent confines them, its
// Tenancy (nil otherwise). check is embedded.CheckTenancy (tests swap it).
func decideTenancy(cfg config.Config, check func(embedded.Config) error) (api.TenantIsolation, *embedded.Tenancy) {
	switch {
	case cfg.MesosURL != "":
		return api.TenantIsolation{Mode: api.TenantIsolationEngine,
			Reason: "tasks run on the Mesos agents of mesos_url: their isolators and users keep namespaces apart"}, nil
	case cfg.KubeEnabled():
		return api.TenantIsolation{Mode: api.TenantIsolationEngine,
			Reason: "tasks run in Kubernetes pods, each namespace's in its Kubernetes namespace"}, nil
	case cfg.TenantIsolation == "off":
		return api.TenantIsolation{Mode: api.TenantIsolationOff,
			Reason: "tenant_isolation=off: every namespace's tasks run as the scheduler's user and read what it reads"}, nil
	}
	t, err := tenancyOf(cfg)
	if err == nil {
		ecfg := embeddedConfig(cfg, slog.New(slog.DiscardHandler))
		ecfg.Tenancy = t
		err = check(ecfg)
	}
	if err != nil {
		return api.TenantIsolation{Mode: api.TenantIsolationUnavailable, Reason: err.Error()}, nil
	}
	return api.TenantIsolation{Mode: api.TenantIsolationOn, Reason: fmt.Sprintf(
		"each namespace's tasks run as a user of its own (uids %s) in PID and mount namespaces that hide the data directory, key files and other sandboxes",
		t.UIDs)}, t
}

// tenancyOf is the embedded agent's Tenancy for cfg: the executor binary
// is the tenant init, each executor's tenant its app's namespace, and
// the data directory and every file of secrets or settings are hidden.
func tenancyOf(cfg config.Config) (*embedded.Tenancy, error) {
	exe, err := executorCommand(cfg)
	if err != nil {
		return nil, err
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return nil, err
	}
	r, err := tenant.ParseRange(cfg.TenantUIDRange)
	if err != nil {
		return nil, err
	}
	hide := cfg.PrivateFiles() // one list of what tasks must not read, from the settings
	cache := cfg.ExecutorCacheDir
	if cache == "" {
		cache = filepath.Join(cfg.DataDir, "cache")
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return nil, err
	}
	return &embedded.Tenancy{Init: initOf(exe), UIDs: r, Hide: hide, ReadOnly: []string{filepath.Dir(exe)}, CacheDir: cache, Of: tenantOf,
		AllowUserNamespaces: cfg.TenantAllowUserNS}, nil
}

// initOf is the tenant init: tenant-init beside the executor (make build
// puts it there), else the executor itself, which serves as one too (it
// links far more, so it starts slower).
func initOf(exe string) string {
	if p := filepath.Join(filepath.Dir(exe), "tenant-init"); fileExists(p) {
		return p
	}
	return exe
}

// tenantOf is an executor's namespace: its id is appKey@-@agentId, the
// app's key carrying the namespace.
func tenantOf(_ string, info mesoslib.ExecutorInfo) string {
	app, _, err := jobs.ParseExecutorID(info.ExecutorID.Value)
	if err != nil {
		return "unknown"
	}
	return namespace.Of(app)
}

// enforceTenancy refuses a start that would run several namespaces, or
// secrets, on an agent that cannot keep them apart (unless the operator
// said tenant_isolation=off), and logs how namespaces are kept apart.
func enforceTenancy(ctx context.Context, cfg config.Config, ti api.TenantIsolation, reg *registry.Registry, log *slog.Logger) error {
	if ti.Mode != api.TenantIsolationUnavailable {
		if ti.Mode == api.TenantIsolationOff {
			log.Warn("tenant isolation off", "reason", ti.Reason)
		} else {
			log.Info("tenant isolation "+ti.Mode, "reason", ti.Reason)
		}
		return nil
	}
	if cfg.TenantIsolation == "on" {
		return fmt.Errorf("tenant_isolation=on, but it is unavailable: %s", ti.Reason)
	}
	var why []string
	if cfg.SecretsKeyFile != "" {
		why = append(why, "a secrets key (secrets_key_file)")
	}
	recs, err := reg.Tenancy().Namespaces(ctx)
	if err != nil {
		return err
	}
	if len(recs) > 1 {
		why = append(why, fmt.Sprintf("%d namespaces", len(recs)))
	}
	if len(why) > 0 {
		return fmt.Errorf("tenant isolation is unavailable (%s): every namespace's tasks would run as this scheduler's user, able to read its data directory, key file and each other's secrets; with %s the scheduler does not start so. Run it as root, or set tenant_isolation=off to accept that (docs/tenancy.md)",
			ti.Reason, strings.Join(why, " and "))
	}
	log.Warn("tenant isolation unavailable: tasks run as this scheduler's user; fine for one team, but a second namespace or a secrets key will be refused", "reason", ti.Reason)
	return nil
}

// secureFiles closes the data directory and the secrets key file to
// everyone but their owner (root, when tenants are isolated).
func secureFiles(cfg config.Config, log *slog.Logger) error {
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if cfg.SecretsKeyFile == "" {
		return nil
	}
	st, err := os.Stat(cfg.SecretsKeyFile)
	if err != nil {
		return fmt.Errorf("secrets_key_file: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(cfg.SecretsKeyFile, perm&0o700); err != nil {
			return fmt.Errorf("secrets_key_file: %w", err)
		}
		log.Warn("secrets key file was open to other users: closed", "file", cfg.SecretsKeyFile, "mode", fmt.Sprintf("%o", perm&0o700))
	}
	return nil
}
