package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// envOf makes a getenv over a fixed map (the process environment is never read).
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// same compares configs, time zones by name (LoadLocation returns a new pointer each time).
func same(a, b Config) bool {
	if a.Location.String() != b.Location.String() {
		return false
	}
	a.Location, b.Location = nil, nil
	return reflect.DeepEqual(a, b)
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "elasticjob-cloud-scheduler.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, args []string, env map[string]string) Config {
	t.Helper()
	c, err := Load(args, envOf(env), io.Discard)
	if err != nil {
		t.Fatalf("Load(%q, %v): %v", args, env, err)
	}
	return c
}

func loadErr(t *testing.T, args []string, env map[string]string, subs ...string) {
	t.Helper()
	_, err := Load(args, envOf(env), io.Discard)
	if err == nil {
		t.Fatalf("Load(%q, %v) succeeded; want an error containing %q", args, env, subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestDefaults(t *testing.T) {
	c := load(t, nil, nil)
	for _, tc := range []struct {
		key       string
		got, want any
	}{
		{"data_dir", c.DataDir, mustAbs(t, "data")}, {"hostname", c.Hostname, "127.0.0.1"}, {"http_address", c.HTTPAddress, "127.0.0.1"},
		{"http_port", c.HTTPPort, 8899}, {"user", c.User, ""}, {"mesos_url", c.MesosURL, ""}, {"mesos_role", c.MesosRole, "*"},
		{"zk_servers", c.ZKServers, ""}, {"zk_namespace", c.ZKNamespace, "elasticjob-cloud"}, {"zk_digest", c.ZKDigest, ""},
		{"job_state_queue_size", c.JobStateQueue, 10000}, {"event_trace_rdb_driver", c.RDBDriver, ""},
		{"event_trace_rdb_url", c.RDBURL, ""}, {"reconcile_interval_minutes", c.ReconcileMinutes, 10},
		{"auth_username", c.AuthUsername, ""}, {"auth_password", c.AuthPassword, ""}, {"auth_token_ttl", c.TokenTTL, 12 * time.Hour},
		{"max_body_bytes", c.MaxBodyBytes, int64(1 << 20)}, {"offer_refuse_seconds", c.OfferRefuse, 5 * time.Second}, {"offer_hold", c.OfferHold, time.Second},
		{"log_level", c.LogLevel, "info"}, {"time_zone", c.Location, time.Local}, {"config", c.ConfigFile, ""},
		{"mesos_framework_name", c.Mesos.Name, "elasticjob-cloud"}, {"mesos_checkpoint", c.Mesos.Checkpoint, true},
		{"mesos_failover_timeout", c.Mesos.FailoverTimeout, 168 * time.Hour}, {"mesos_principal", c.Mesos.Principal, ""},
		{"mesos_secret", c.Mesos.Secret, ""}, {"advertise_url", c.Advertised(), "http://127.0.0.1:8899"},
		{"allow_file_app_urls", c.AllowFileAppURLs, false}, {"remote agents", c.RemoteAgents(), false},
		{"package_max_bytes", c.PackageMaxBytes, int64(1 << 30)}, {"package_gc_grace", c.PackageGCGrace, time.Hour},
		{"debug_pprof", c.DebugPprof, false},
	} {
		if tc.got != tc.want {
			t.Errorf("default %s = %v, want %v", tc.key, tc.got, tc.want)
		}
	}
	if !c.Loopback() || c.ListenAddr() != "127.0.0.1:8899" {
		t.Errorf("Loopback %v ListenAddr %q", c.Loopback(), c.ListenAddr())
	}
	// Every default in the table is valid on its own.
	for _, s := range settings {
		var z Config
		if err := s.set(&z, s.def); err != nil {
			t.Errorf("default of %s: %v", s.key, err)
		}
	}
}

// originalProperties uses every key of the original's
// conf/elasticjob-cloud-scheduler.properties, in its style.
const originalProperties = `# Routable IP address
hostname=10.0.0.5

# Username used by mesos framework
user=mesos

mesos_url=http://10.0.0.1:5050
mesos_role=elasticjob
! another comment style
zk_servers=10.0.0.2:2181,10.0.0.3:2181
zk_namespace=ej-prod
zk_digest=ej:zkpw
http_port = 9900
job_state_queue_size=500
event_trace_rdb_driver=com.mysql.jdbc.Driver
event_trace_rdb_url=jdbc:mysql://10.0.0.4:3306/elastic_job_log
event_trace_rdb_username=ej
event_trace_rdb_password=dbpw
reconcile_interval_minutes=-1
auth_username=root
auth_password:pwd
`

func TestPropertiesFile(t *testing.T) {
	p := writeFile(t, originalProperties)
	c := load(t, []string{"--config", p}, nil)
	want := load(t, nil, nil) // the defaults, with the file's keys over them
	want.ConfigFile, want.Hostname, want.HTTPPort, want.User = p, "10.0.0.5", 9900, "mesos"
	want.MesosURL, want.MesosRole, want.ZKServers = "http://10.0.0.1:5050", "elasticjob", "10.0.0.2:2181,10.0.0.3:2181"
	want.ZKNamespace, want.ZKDigest, want.JobStateQueue = "ej-prod", "ej:zkpw", 500
	want.RDBDriver, want.RDBURL = "com.mysql.jdbc.Driver", "jdbc:mysql://10.0.0.4:3306/elastic_job_log"
	want.RDBUsername, want.RDBPassword, want.ReconcileMinutes = "ej", "dbpw", -1
	want.AuthUsername, want.AuthPassword = "root", "pwd"
	if !same(c, want) {
		t.Errorf("from file:\n got %+v\nwant %+v", c, want)
	}
	// The file can also be named by the environment.
	for _, k := range []string{"config_file", "ELASTICJOB_CONFIG_FILE"} {
		if c := load(t, nil, map[string]string{k: p}); c.HTTPPort != 9900 || c.ConfigFile != p {
			t.Errorf("%s: HTTPPort %d ConfigFile %q", k, c.HTTPPort, c.ConfigFile)
		}
	}
	r := c.Redacted()
	for _, k := range []string{"zk_digest", "event_trace_rdb_password", "auth_password"} {
		if r[k] != "***" {
			t.Errorf("Redacted()[%s] = %v, want ***", k, r[k])
		}
	}
}

func TestWindowsFile(t *testing.T) {
	p := writeFile(t, "\ufeffhostname=10.0.0.5\r\n# comment\r\nhttp_port=9900\r\n")
	if c := load(t, []string{"--config", p}, nil); c.Hostname != "10.0.0.5" || c.HTTPPort != 9900 {
		t.Errorf("BOM/CRLF file: hostname %q port %d", c.Hostname, c.HTTPPort)
	}
}

func TestPrecedence(t *testing.T) {
	p := writeFile(t, "http_port=9900\nzk_servers=file:2181\nmesos_url=http://file:5050\nmesos_role=file\nuser=file\nhostname=10.9.9.9\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(Config) bool
	}{
		{"file", []string{"--config=" + p}, nil, func(c Config) bool { return c.HTTPPort == 9900 && c.ZKServers == "file:2181" }},
		{"same-name env over file", []string{"--config=" + p}, map[string]string{"http_port": "7000", "zk_servers": "env:2181"},
			func(c Config) bool { return c.HTTPPort == 7000 && c.ZKServers == "env:2181" && c.MesosRole == "file" }},
		{"prefixed env over file", []string{"--config=" + p}, map[string]string{"ELASTICJOB_HTTP_PORT": "7001", "ELASTICJOB_MESOS_ROLE": "env"},
			func(c Config) bool { return c.HTTPPort == 7001 && c.MesosRole == "env" }},
		{"same-name env over prefixed", nil, map[string]string{"http_port": "7002", "ELASTICJOB_HTTP_PORT": "7003"},
			func(c Config) bool { return c.HTTPPort == 7002 }},
		{"flag over env", []string{"--config", p, "--http-port=7100", "--zk-servers", "flag:2181"}, map[string]string{"http_port": "7000", "ELASTICJOB_ZK_SERVERS": "env:2181"},
			func(c Config) bool { return c.HTTPPort == 7100 && c.ZKServers == "flag:2181" }},
		{"flag equal to the default still wins", []string{"--config", p, "--http-port=8899"}, map[string]string{"http_port": "7000"},
			func(c Config) bool { return c.HTTPPort == 8899 }},
		{"HOSTNAME and USER are not read", []string{"--config", p}, map[string]string{"HOSTNAME": "shellbox", "USER": "bob", "HTTP_PORT": "1", "ZK_SERVERS": "x:1"},
			func(c Config) bool {
				return c.Hostname == "10.9.9.9" && c.User == "file" && c.HTTPPort == 9900 && c.ZKServers == "file:2181"
			}},
		{"HOSTNAME not read over the default", nil, map[string]string{"HOSTNAME": "shellbox", "USER": "bob"},
			func(c Config) bool { return c.Hostname == "127.0.0.1" && c.User == "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c := load(t, tc.args, tc.env); !tc.want(c) {
				t.Errorf("got %+v", c)
			}
		})
	}
}

func TestEveryKeyFromEveryLayer(t *testing.T) {
	// A value each setting accepts and that differs from its default.
	sample := map[string]string{
		"data_dir": "/var/ej", "hostname": "10.1.1.1", "http_address": "127.0.0.2", "http_port": "1234", "user": "u",
		"mesos_url": "http://m:5050", "mesos_role": "r", "zk_servers": "z:2181", "zk_namespace": "ns", "zk_digest": "a:b",
		"job_state_queue_size": "7", "workflow_runs_kept": "12", "event_trace_rdb_driver": "mysql", "event_trace_rdb_url": "u:p@tcp(db)/x",
		"event_trace_rdb_username": "dbu", "event_trace_rdb_password": "dbp", "reconcile_interval_minutes": "2",
		"auth_username": "adm", "auth_password": "pw", "auth_guest_username": "gst", "auth_guest_password": "gpw",
		"auth_token_ttl": "90m", "auth_users_file": "/etc/ej/users.yaml", "time_zone": "Asia/Shanghai", "executor_path": "/usr/bin/ej-exec",
		"executor_cache_dir": "/var/cache/ej", "executor_java_jar": "/opt/ej/elasticjob-cloud-executor.jar", "executor_java_opts": "-XX:TieredStopAtLevel=1", "embedded_cpus": "2.5", "embedded_mem_mb": "2048",
		"max_body_bytes": "4096", "metrics_access": "login", "offer_refuse_seconds": "9s", "offer_hold": "3s", "registry_sync": "normal", "fire_lead": "5ms", "cron_jitter": "15m", "log_level": "debug", "executor_idle_timeout": "1m",
		"history_retention": "24h", "history_max_rows": "5",
		"mesos_framework_name": "ej-prod", "mesos_checkpoint": "false", "mesos_failover_timeout": "2h",
		"mesos_principal": "ej", "mesos_secret": "s3cret", "mesos_task_users": "pay=pay-jobs", "advertise_url": "http://sched-1:8899", "allow_file_app_urls": "true",
		"zk_session_timeout": "4s", "reconcile_wait": "3s", "task_unreachable_timeout": "3m",
		"package_max_bytes": "104857600", "package_gc_grace": "10m", "debug_pprof": "true", "memory_limit": "900MiB",
		"isolation": "off", "cgroups_root": "ej/cg", "isolation_pids_max": "64", "isolation_cpu_quota": "true", "tenant_isolation": "off", "tenant_uid_range": "200000-200099", "tenant_allow_user_namespaces": "true", "sandbox_disk_mb": "2048", "disk_headroom_mb": "512", "disk_reserve_mb": "32", "namespace_pids_max": "2000", "namespace_mem_mb": "4096", "namespace_disk_mb": "8192",
		"gc_delay": "48h", "gc_disk_headroom": "0.25", "executor_cache_size": "512MiB",
		"recovery_timeout": "90s", "recover": "cleanup",
		"secrets_key_file": "/etc/ej/secrets.key", "metrics_token_file": "/etc/ej/metrics-token",
		"oidc_issuer": "https://idp.example.com/realms/ej", "oidc_client_id": "elasticjob", "oidc_client_secret_file": "/etc/ej/oidc-secret",
		"oidc_groups_claim": "roles", "oidc_username_claim": "email", "oidc_redirect_url": "https://ej.example.com/api/oidc/callback",
		"oidc_scopes": "openid email",
	}
	var missing []string
	settings := mesosSettings() // the kube_* keys select another engine: kube_test.go
	for _, s := range settings {
		if _, ok := sample[s.key]; !ok {
			missing = append(missing, s.key)
		}
	}
	if len(missing) > 0 || len(sample) != len(settings) {
		t.Fatalf("sample lacks settings %v (or names removed ones): give each a valid non-default value here", missing)
	}
	defaults := load(t, nil, nil)
	var file strings.Builder
	for _, s := range settings {
		v, ok := sample[s.key]
		if !ok {
			t.Fatalf("no sample for %s", s.key)
		}
		file.WriteString(s.key + "=" + v + "\n")
	}
	fromFile := load(t, []string{"--config", writeFile(t, file.String())}, nil)
	fromFile.ConfigFile = ""
	env, prefixed := map[string]string{}, map[string]string{}
	var args []string
	for k, v := range sample {
		env[k] = v
		prefixed["ELASTICJOB_"+strings.ToUpper(k)] = v
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}
	layers := map[string]Config{"file": fromFile, "env": load(t, nil, env), "prefixed env": load(t, nil, prefixed), "flags": load(t, args, nil)}
	for name, c := range layers {
		if !same(c, fromFile) {
			t.Errorf("%s layer:\n got %+v\nwant %+v", name, c, fromFile)
		}
	}
	// Every key alone (paired ones in pairs) moves its setting off the default.
	pairs := map[string]string{"auth_username": "auth_password", "auth_password": "auth_username",
		"auth_guest_username": "auth_guest_password", "auth_guest_password": "auth_guest_username",
		"event_trace_rdb_driver": "event_trace_rdb_url", "mesos_secret": "mesos_principal", "zk_servers": "mesos_url"}
	for _, s := range settings {
		e := map[string]string{s.key: sample[s.key]}
		if other, ok := pairs[s.key]; ok {
			e[other] = sample[other]
		}
		if s.key == "auth_users_file" || s.key == "oidc_issuer" { // needs an admin
			e["auth_username"], e["auth_password"] = sample["auth_username"], sample["auth_password"]
		}
		if s.key == "oidc_issuer" { // needs a client and the users file's groups
			e["oidc_client_id"], e["auth_users_file"] = sample["oidc_client_id"], sample["auth_users_file"]
		}
		if c := load(t, nil, e); same(c, defaults) {
			t.Errorf("setting %s=%s changed nothing", s.key, sample[s.key])
		}
	}
	if fromFile.Location.String() != "Asia/Shanghai" || fromFile.TokenTTL != 90*time.Minute || fromFile.EmbeddedCPUs != 2.5 {
		t.Errorf("typed values: %v %v %v", fromFile.Location, fromFile.TokenTTL, fromFile.EmbeddedCPUs)
	}
}

func TestFileErrors(t *testing.T) {
	p := writeFile(t, "# comment\nhttp_port=9900\nmesos_master=http://m:5050\n")
	_, err := Load([]string{"--config", p}, envOf(nil), io.Discard)
	if err == nil {
		t.Fatal("unknown key accepted")
	}
	for _, want := range []string{p, "line 3", `unknown key "mesos_master"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	for _, s := range settings { // the message lists every known key
		if !strings.Contains(err.Error(), s.key) {
			t.Errorf("error %q does not list known key %s", err, s.key)
		}
	}
	loadErr(t, []string{"--config", writeFile(t, "\n\nhttp_port 9900\n")}, nil, "line 3", "expected key=value")
	loadErr(t, []string{"--config", filepath.Join(t.TempDir(), "missing.properties")}, nil, "config file", "missing.properties")
	// Keys are case-sensitive, as in the original.
	loadErr(t, []string{"--config", writeFile(t, "HTTP_PORT=1\n")}, nil, `unknown key "HTTP_PORT"`)
	long := "hostname=127.0.0.1\nzk_servers=" + strings.Repeat("h", maxPropertyLine) + "\n"
	loadErr(t, []string{"--config", writeFile(t, long)}, nil, "line 2", "longer than")
}

func TestBadValues(t *testing.T) {
	for _, tc := range []struct{ key, value, sub string }{
		{"http_port", "abc", "http_port"},
		{"http_port", "70000", "http_port"},
		{"http_port", "-1", "http_port"},
		{"job_state_queue_size", "many", "job_state_queue_size"},
		{"job_state_queue_size", "0", "job_state_queue_size"},
		{"workflow_runs_kept", "0", "workflow_runs_kept"},
		{"reconcile_interval_minutes", "1.5", "reconcile_interval_minutes"},
		{"auth_token_ttl", "12", "auth_token_ttl"},
		{"offer_refuse_seconds", "-5s", "offer_refuse_seconds"},
		{"embedded_cpus", "-1", "embedded_cpus"},
		{"embedded_cpus", "NaN", "embedded_cpus"},
		{"embedded_mem_mb", "+Inf", "embedded_mem_mb"},
		{"embedded_mem_mb", "lots", "embedded_mem_mb"},
		{"max_body_bytes", "100", "max_body_bytes"},
		{"package_max_bytes", "0", "package_max_bytes"},
		{"package_gc_grace", "soon", "package_gc_grace"},
		{"memory_limit", "lots", "memory_limit"},
		{"memory_limit", "-1GiB", "memory_limit"},
		{"log_level", "loud", "log_level"},
		{"time_zone", "Mars/Olympus", "time_zone"},
		{"mesos_url", "zk://127.0.0.1:2181", "needs the path"},
		{"mesos_url", "ftp://m:5050", "mesos_url"},
		{"mesos_url", "http://", "mesos_url"},
		{"mesos_framework_name", " ", "mesos_framework_name"},
		{"mesos_checkpoint", "maybe", "mesos_checkpoint"},
		{"mesos_failover_timeout", "0s", "mesos_failover_timeout"},
		{"mesos_secret", "s3cret", "set mesos_principal too"},
		{"advertise_url", "ftp://sched:8899", "advertise_url"},
		{"advertise_url", "sched:8899", "advertise_url"},
		{"allow_file_app_urls", "sometimes", "allow_file_app_urls"},
		{"data_dir", "", "data_dir"},
		{"executor_idle_timeout", "soon", "executor_idle_timeout"},
		{"history_retention", "1 month", "history_retention"},
		{"history_max_rows", "-1", "history_max_rows"},
		{"recovery_timeout", "0s", "recovery_timeout"},
		{"recovery_timeout", "a while", "recovery_timeout"},
		{"recover", "restart", "recover"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			loadErr(t, []string{"--config", writeFile(t, tc.key+"="+tc.value+"\n")}, nil, tc.sub)
			loadErr(t, nil, map[string]string{tc.key: tc.value}, tc.sub)
			loadErr(t, []string{"--" + strings.ReplaceAll(tc.key, "_", "-") + "=" + tc.value}, nil, tc.sub)
		})
	}
	loadErr(t, nil, map[string]string{"http_port": "x"}, "environment http_port")
	loadErr(t, []string{"--http-port=x"}, nil, "flag --http-port")
	loadErr(t, []string{"--no-such-flag"}, nil, "no-such-flag")
}

func TestAuthRequiredOffLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0", "10.0.0.5", "::", "example.com"} {
		loadErr(t, nil, map[string]string{"http_address": addr}, "http_address", addr, "is not loopback", "auth_username", "auth_password")
		c := load(t, nil, map[string]string{"http_address": addr, "auth_username": "root", "auth_password": "pwd"})
		if c.Loopback() {
			t.Errorf("%s reported as loopback", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1", "127.1.2.3", "::1", "localhost"} {
		if c := load(t, nil, map[string]string{"http_address": addr}); !c.Loopback() {
			t.Errorf("%s not reported as loopback", addr)
		}
	}
	loadErr(t, nil, map[string]string{"auth_username": "root"}, "auth_username and auth_password must be set together")
	loadErr(t, nil, map[string]string{"auth_password": "pwd"}, "auth_username and auth_password must be set together")
	loadErr(t, nil, map[string]string{"auth_guest_username": "g"}, "auth_guest_username and auth_guest_password")
	loadErr(t, nil, map[string]string{"auth_users_file": "/etc/ej/users.yaml"}, "auth_users_file needs auth_username")
	loadErr(t, nil, map[string]string{"auth_username": "root", "auth_password": "a", "auth_guest_username": "root", "auth_guest_password": "b"},
		"auth_guest_username must differ")
	if c := load(t, nil, map[string]string{"http_address": "::1", "http_port": "80"}); c.ListenAddr() != "[::1]:80" {
		t.Errorf("ListenAddr = %q", c.ListenAddr())
	}
}

func TestHelpMentionsEveryKey(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out bytes.Buffer
		_, err := Load([]string{arg}, envOf(nil), &out)
		if !errors.Is(err, ErrHelp) {
			t.Fatalf("Load(%s) error = %v, want ErrHelp", arg, err)
		}
		help := out.String()
		for _, s := range settings {
			for _, want := range []string{"-" + strings.ReplaceAll(s.key, "_", "-") + " ", s.key, "ELASTICJOB_" + strings.ToUpper(s.key), s.help} {
				if !strings.Contains(help, want) {
					t.Errorf("%s output lacks %q", arg, want)
				}
			}
		}
		if !strings.Contains(help, "-config") {
			t.Errorf("%s output lacks -config", arg)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestClusterNeedsASharedMaster(t *testing.T) {
	_, err := Load([]string{"--zk-servers", "127.0.0.1:2181"}, envOf(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "set mesos_url") {
		t.Fatalf("zk_servers without mesos_url: %v", err)
	}
}

func TestIsolationAndGCSettings(t *testing.T) {
	c := load(t, nil, nil)
	if c.Isolation != "auto" || c.CgroupsRoot != "elasticjob" || c.PidsMax != 4096 || c.CPUQuota ||
		c.GCDelay != 168*time.Hour || c.GCDiskHeadroom != 0.1 || c.ExecutorCacheMax != 2<<30 {
		t.Fatalf("defaults: %+v", c)
	}
	c = load(t, nil, map[string]string{"executor_cache_size": "1048576", "isolation_pids_max": "0"})
	if c.ExecutorCacheMax != 1<<20 || c.PidsMax != 0 {
		t.Fatalf("byte count and no pids limit: %+v", c)
	}
	for k, v := range map[string]string{"isolation": "cgroups", "gc_disk_headroom": "1", "gc_delay": "0s",
		"executor_cache_size": "2 lots", "isolation_pids_max": "-1", "isolation_cpu_quota": "maybe", "tenant_isolation": "maybe", "tenant_uid_range": "5-3"} {
		_, err := Load(nil, envOf(map[string]string{k: v}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
