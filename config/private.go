package config

import "path/filepath"

// privateFileSettings are the settings naming a file or directory of the
// scheduler's own that no task may read: keys, tokens, credentials, the
// users, the registry and the sandboxes. PrivateFiles hides them all from
// tasks (the embedded agent's tenant mount plan covers each); the
// properties file itself (-config) is added there too.
var privateFileSettings = map[string]func(Config) string{
	"data_dir":                func(c Config) string { return c.DataDir },
	"secrets_key_file":        func(c Config) string { return c.SecretsKeyFile },
	"metrics_token_file":      func(c Config) string { return c.MetricsTokenFile },
	"auth_users_file":         func(c Config) string { return c.UsersFile },
	"oidc_client_secret_file": func(c Config) string { return c.OIDC.ClientSecretFile },
	"kube_config":             func(c Config) string { return c.Kube.Config },
	"clusters_file":           func(c Config) string { return c.ClustersFile }, // engines' credentials and addresses
}

// sharedPathSettings are the path-valued settings tasks may see, with why:
// config_test.go fails on a path-valued setting in neither table.
var sharedPathSettings = map[string]string{
	"executor_path":      "the executor binary: tasks run it (shown read-only)",
	"executor_java_jar":  "the Java executor: tasks run it",
	"executor_cache_dir": "the app cache: each tenant sees its own part alone (embedded.Tenancy.CacheDir)",
	"cgroups_root":       "a cgroup name, not a path of the file system",
}

// PrivateFiles lists, as absolute paths, every file and directory the
// settings name that tasks must not read: what tenant isolation hides.
// One list, derived from the settings, so a new file-valued setting is
// hidden by being added to privateFileSettings (a test fails until it is
// classified).
func (c Config) PrivateFiles() []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	for _, s := range settings {
		if get, ok := privateFileSettings[s.key]; ok {
			add(get(c))
		}
	}
	add(c.ConfigFile)
	return out
}
