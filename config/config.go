// Package config loads the scheduler's settings in one validated place:
// defaults, then the original's properties file
// (elasticjob-cloud-scheduler.properties keys), then same-name environment
// variables (or ELASTICJOB_-prefixed upper-case ones), then flags.
package config

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

// Config is every setting, typed.
type Config struct {
	ConfigFile  string
	DataDir     string
	Hostname    string
	HTTPAddress string
	HTTPPort    int
	User        string
	MesosURL    string
	// ClustersFile lists the clusters (clusters_file), read into Clusters (clusters.go).
	ClustersFile     string
	Clusters         []Cluster
	MesosRole        string
	Mesos            MesosFramework // mesos_framework_name, mesos_checkpoint, … (config/mesos.go)
	Kube             Kube           // kube_config, kube_namespace, … (config/kube.go)
	AdvertiseURL     string
	AllowFileAppURLs bool
	Registry         string // registry: embedded, zookeeper or etcd ("": from zk_servers; RegistryKind)
	Etcd             Etcd   // etcd_*: the registry on etcd (config/registry.go)
	ZKServers        string
	ZKNamespace      string
	ZKDigest         string
	ZKSessionTimeout time.Duration
	ReconcileWait    time.Duration
	TaskUnreachable  time.Duration // task_unreachable_timeout
	JobStateQueue    int
	WorkflowRunsKept int // workflow_runs_kept: finished runs of each workflow kept in the registry
	RDBDriver        string
	RDBURL           string
	RDBUsername      string
	RDBPassword      string
	HistoryMaxAge    time.Duration
	HistoryMaxRows   int
	ReconcileMinutes int
	AuthUsername     string
	AuthPassword     string
	GuestUsername    string
	GuestPassword    string
	// UsersFile names the users file (per-namespace roles; docs/tenancy.md).
	UsersFile        string
	OIDC             OIDC   // oidc_*: login through an OpenID Connect provider (auth.go)
	SecretsKeyFile   string // secrets_key_file: the keys sealing the namespaces' secrets (auth.go)
	MetricsTokenFile string // metrics_token_file: a bearer token reading every series of /metrics (auth.go)
	TokenTTL         time.Duration
	TimeZone         string
	ExecutorPath     string
	ExecutorCacheDir string
	ExecutorJavaJar  string
	ExecutorJavaOpts string
	ExecutorIdle     time.Duration
	EmbeddedCPUs     float64
	EmbeddedMemMB    float64
	RecoveryTimeout  time.Duration // recovery_timeout: executors of the embedded agent keep their tasks this long without it
	Recover          string        // recover: reconnect (default) or cleanup (stop what the last run left, then exit)
	Isolation        string        // auto, v1, v2 or off (embedded agent)
	CgroupsRoot      string
	PidsMax          int64 // per task and executor; 0: no limit
	NamespacePidsMax int   // namespace_pids_max: all of a namespace's processes on the embedded agent; 0: no cap
	NamespaceMemMB   int   // namespace_mem_mb: all of a namespace's memory on the embedded agent; 0: no cap
	NamespaceDiskMB  int   // namespace_disk_mb: all of a namespace's live sandboxes on the embedded agent; 0: no cap
	SandboxDiskMB    int   // sandbox_disk_mb: a sandbox's disk limit when it declares none; 0: none
	DiskHeadroomMB   int   // disk_headroom_mb: free space kept under data_dir; 0: none
	DiskReserveMB    int   // disk_reserve_mb: the data directory's reserve file for the registry; 0: none
	CPUQuota         bool
	TenantIsolation  string // tenant_isolation: auto, on or off (embedded agent)
	TenantUIDRange   string // tenant_uid_range: LO-HI
	// TenantAllowUserNS: tenant_allow_user_namespaces (default refused by seccomp)
	TenantAllowUserNS bool
	GCDelay           time.Duration
	GCDiskHeadroom    float64
	ExecutorCacheMax  int64 // bytes; 0: unbounded
	MaxBodyBytes      int64
	MetricsAccess     string
	PackageMaxBytes   int64         // package_max_bytes: largest uploaded app package
	PackageGCGrace    time.Duration // package_gc_grace: how long a package no app names is kept
	OfferRefuse       time.Duration
	OfferHold         time.Duration
	RegistrySync      string
	FireLead          time.Duration
	CronJitter        time.Duration
	LogLevel          string
	Location          *time.Location
	DebugPprof        bool  // debug_pprof: serve /debug/pprof (admins only) and sample blocking and lock contention
	MemoryLimit       int64 // memory_limit: the Go runtime's soft memory limit in bytes (0: Go's default)
	MemoryLimitAuto   bool  // memory_limit=auto: 90 % of the process's cgroup memory limit, when it has one
}

// setting is one row of the table every source is read through.
type setting struct {
	key, def, help string
	set            func(c *Config, v string) error
}

func str(p func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = v; return nil }
}

func integer(key string, p func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", key, v)
		}
		*p(c) = n
		return nil
	}
}

func float(key string, p func(*Config) *float64) func(*Config, string) error {
	return func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f >= 0) || math.IsInf(f, 1) { // NaN fails f >= 0
			return fmt.Errorf("%s: %q is not a non-negative number", key, v)
		}
		*p(c) = f
		return nil
	}
}

func boolean(key string, p func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s: %q is not true or false", key, v)
		}
		*p(c) = b
		return nil
	}
}

// parseSize reads a byte count with an optional binary unit: "2GiB",
// "512MiB", "64K", "1048576".
func parseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size like 2GiB, 512MiB or a byte count", v)
	}
	return n * mult, nil
}

func duration(key string, p func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return fmt.Errorf("%s: %q is not a duration like 30s or 12h", key, v)
		}
		*p(c) = d
		return nil
	}
}

var settings = []setting{
	{"data_dir", "data", "directory of the embedded store, history database, sandboxes and app cache", str(func(c *Config) *string { return &c.DataDir })},
	{"hostname", "127.0.0.1", "host name or IP this scheduler advertises to Mesos and executors", str(func(c *Config) *string { return &c.Hostname })},
	{"http_address", "127.0.0.1", "address the API and console listen on; any non-loopback address requires auth_username/auth_password", str(func(c *Config) *string { return &c.HTTPAddress })},
	{"http_port", "8899", "port of the REST API and web console", integer("http_port", func(c *Config) *int { return &c.HTTPPort })},
	{"user", "", "OS user Mesos runs executors as (empty: the agent's user)", str(func(c *Config) *string { return &c.User })},
	{"mesos_url", "", "Mesos master: http://host:5050, or zk://host1:2181,host2:2181/mesos to follow the leading master in ZooKeeper; empty runs the embedded single-node master+agent", str(func(c *Config) *string { return &c.MesosURL })},
	{"mesos_role", "*", "Mesos role of the framework", str(func(c *Config) *string { return &c.MesosRole })},
	{"mesos_framework_name", "elasticjob-cloud", "Mesos framework name", str(func(c *Config) *string { return &c.Mesos.Name })},
	{"mesos_checkpoint", "true", "ask agents to checkpoint the framework's tasks, so an agent restart recovers them instead of killing them", boolean("mesos_checkpoint", func(c *Config) *bool { return &c.Mesos.Checkpoint })},
	{"mesos_failover_timeout", "168h", "how long Mesos keeps the framework's tasks running while no scheduler is subscribed", duration("mesos_failover_timeout", func(c *Config) *time.Duration { return &c.Mesos.FailoverTimeout })},
	{"mesos_principal", "", "Mesos principal of the framework", str(func(c *Config) *string { return &c.Mesos.Principal })},
	{"mesos_secret", "", "secret of mesos_principal, sent as HTTP Basic authentication on every call to the master", str(func(c *Config) *string { return &c.Mesos.Secret })},
	{"mesos_task_users", "", "with mesos_url: the OS user each namespace's executors and tasks run as on the agents, namespace=user,… (* for every other namespace; empty: the user setting)", str(func(c *Config) *string { return &c.Mesos.TaskUsers })},
	{"advertise_url", "", "base URL agents use to fetch the executor from this scheduler when mesos_url is set (empty: http://hostname:http_port)", str(func(c *Config) *string { return &c.AdvertiseURL })},
	{"allow_file_app_urls", "false", "accept file:// app URLs with mesos_url set (only when every agent runs on this machine; the embedded default always accepts them)", boolean("allow_file_app_urls", func(c *Config) *bool { return &c.AllowFileAppURLs })},
	{"zk_servers", "", "ZooKeeper servers host:port,host:port for the registry and leader election; empty uses the embedded store in data_dir", str(func(c *Config) *string { return &c.ZKServers })},
	{"zk_namespace", "elasticjob-cloud", "ZooKeeper root node", str(func(c *Config) *string { return &c.ZKNamespace })},
	{"zk_session_timeout", "15s", "ZooKeeper session timeout: a leader that loses ZooKeeper for this long is replaced (it stops at once when its connection is suspended)", duration("zk_session_timeout", func(c *Config) *time.Duration { return &c.ZKSessionTimeout })},
	{"task_unreachable_timeout", "10m", "how long a task whose agent is unreachable (Mesos TASK_UNREACHABLE) stays running before it counts as lost and its shard fails over, counted from when Mesos lost the agent (across leaders); an agent marked gone fails its tasks over at once", duration("task_unreachable_timeout", func(c *Config) *time.Duration { return &c.TaskUnreachable })},
	{"reconcile_wait", "15s", "after subscribing, launching waits at most this long for Mesos to confirm every task recorded as running", duration("reconcile_wait", func(c *Config) *time.Duration { return &c.ReconcileWait })},
	{"zk_digest", "", "ZooKeeper digest credentials user:password (optional)", str(func(c *Config) *string { return &c.ZKDigest })},
	{"job_state_queue_size", "10000", "maximum pending executions kept per job in the ready queue", integer("job_state_queue_size", func(c *Config) *int { return &c.JobStateQueue })},
	{"workflow_runs_kept", "100", "finished runs of each workflow kept in the registry (and listed by GET /api/workflow/{name}/runs); older ones stay in the history database", integer("workflow_runs_kept", func(c *Config) *int { return &c.WorkflowRunsKept })},
	{"event_trace_rdb_driver", "", "history database: empty or sqlite (embedded, in data_dir), mysql (or com.mysql.jdbc.Driver / com.mysql.cj.jdbc.Driver), or none to keep no history", str(func(c *Config) *string { return &c.RDBDriver })},
	{"event_trace_rdb_url", "", "history database URL: jdbc:mysql://host:3306/db or a Go MySQL DSN", str(func(c *Config) *string { return &c.RDBURL })},
	{"event_trace_rdb_username", "", "history database user", str(func(c *Config) *string { return &c.RDBUsername })},
	{"event_trace_rdb_password", "", "history database password", str(func(c *Config) *string { return &c.RDBPassword })},
	{"history_retention", "720h", "delete history (execution log, status traces and statistics rows) older than this (0 keeps it forever)", duration("history_retention", func(c *Config) *time.Duration { return &c.HistoryMaxAge })},
	{"history_max_rows", "10000000", "keep at most this many rows in each history and statistics table, oldest deleted first (0: no limit)", integer("history_max_rows", func(c *Config) *int { return &c.HistoryMaxRows })},
	{"reconcile_interval_minutes", "10", "minutes between periodic task reconciliations (<= 0 disables the periodic run)", integer("reconcile_interval_minutes", func(c *Config) *int { return &c.ReconcileMinutes })},
	{"auth_username", "", "admin user name (read and write)", str(func(c *Config) *string { return &c.AuthUsername })},
	{"auth_password", "", "admin password", str(func(c *Config) *string { return &c.AuthPassword })},
	{"auth_guest_username", "", "guest user name (read only)", str(func(c *Config) *string { return &c.GuestUsername })},
	{"auth_guest_password", "", "guest password", str(func(c *Config) *string { return &c.GuestPassword })},
	{"auth_users_file", "", "YAML file of users with bcrypt passwords and a role (view or edit) per namespace, reloaded when it changes (docs/tenancy.md); needs auth_username", str(func(c *Config) *string { return &c.UsersFile })},
	{"auth_token_ttl", "12h", "lifetime of a login token", duration("auth_token_ttl", func(c *Config) *time.Duration { return &c.TokenTTL })},
	{"time_zone", "", "default IANA time zone of job crons (empty: the machine's local zone)", str(func(c *Config) *string { return &c.TimeZone })},
	{"executor_path", "", "executor command on agents (empty: the executor binary next to the scheduler binary, or on PATH)", str(func(c *Config) *string { return &c.ExecutorPath })},
	{"executor_cache_dir", "", "app download cache on agents (empty: data_dir/cache for the embedded agent)", str(func(c *Config) *string { return &c.ExecutorCacheDir })},
	{"executor_java_jar", "", "the Java library (elasticjob-cloud-executor.jar) on agents, for Java apps (empty: beside the executor binary, else /usr/share/elasticjob/)", str(func(c *Config) *string { return &c.ExecutorJavaJar })},
	{"executor_java_opts", "", "JVM flags, blank separated, for the JVMs the executor starts itself (a jar app, a jobClass)", str(func(c *Config) *string { return &c.ExecutorJavaOpts })},
	{"executor_idle_timeout", "10s", "an executor with no task left exits after this long, releasing its resources (0s: at once, as the original's transient executors did)", duration("executor_idle_timeout", func(c *Config) *time.Duration { return &c.ExecutorIdle })},
	{"embedded_cpus", "0", "CPUs the embedded agent offers (0: this machine's)", float("embedded_cpus", func(c *Config) *float64 { return &c.EmbeddedCPUs })},
	{"embedded_mem_mb", "0", "memory in MB the embedded agent offers (0: this machine's)", float("embedded_mem_mb", func(c *Config) *float64 { return &c.EmbeddedMemMB })},
	{"recovery_timeout", "15m", "embedded agent: how long its executors keep their tasks running while this scheduler is stopped or restarting; a scheduler back within it takes its running work over, after it the executors kill their tasks and exit (Mesos recovery_timeout)", duration("recovery_timeout", func(c *Config) *time.Duration { return &c.RecoveryTimeout })},
	{"recover", "reconnect", "embedded agent at start: reconnect takes over the executors and tasks the last run of data_dir left running; cleanup shuts them all down (their tasks are killed and recorded as such at the next start) and exits, to stop everything on purpose (Mesos --recover)", str(func(c *Config) *string { return &c.Recover })},
	{"isolation", "auto", "enforce the cpus and mem of executors and tasks on the embedded agent with cgroups: auto (v2 where usable, else v1, else none with one warning), v1 or v2 (that mode or the scheduler does not start), off", str(func(c *Config) *string { return &c.Isolation })},
	{"cgroups_root", "elasticjob", "cgroup below the hierarchy root that holds the embedded agent's cgroups", str(func(c *Config) *string { return &c.CgroupsRoot })},
	{"isolation_pids_max", "4096", "most processes (and threads) of each task and of each executor under isolation; 0: no limit", func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("isolation_pids_max: %q is not a process count", v)
		}
		c.PidsMax = n
		return nil
	}},
	{"namespace_pids_max", "8192", "embedded agent under tenant_isolation and cgroups: most processes (and threads) of all of one namespace's executors and tasks together (a cgroup of the namespace's above its containers); 0: no cap", integer("namespace_pids_max", func(c *Config) *int { return &c.NamespacePidsMax })},
	{"namespace_mem_mb", "0", "embedded agent under tenant_isolation and cgroups: most memory in MB of all of one namespace's executors and tasks together; 0: no cap", integer("namespace_mem_mb", func(c *Config) *int { return &c.NamespaceMemMB })},
	{"namespace_disk_mb", "0", "embedded agent under tenant_isolation: most disk in MB all of one namespace's live sandboxes and its app cache hold together, measured with sandbox_disk_mb's; over it the namespace's largest sandbox's executor is killed; 0: no cap", integer("namespace_disk_mb", func(c *Config) *int { return &c.NamespaceDiskMB })},
	{"sandbox_disk_mb", "10240", "embedded agent: most disk in MB a live executor's sandbox may use when the executor and its tasks declare no disk; measured every 15 s as Mesos' disk/du does, an executor over it is killed and its tasks fail (\"sandbox used N MB of its M MB disk limit\"); 0: no limit", integer("sandbox_disk_mb", func(c *Config) *int { return &c.SandboxDiskMB })},
	{"disk_headroom_mb", "1024", "embedded agent: free space in MB kept on the file system of data_dir (the registry's and the sandboxes'); below it the executor with the largest sandbox of the namespace holding the most (sandboxes and app cache) is killed, so that a team filling the disk cannot stop the registry's commits; 0: none", integer("disk_headroom_mb", func(c *Config) *int { return &c.DiskHeadroomMB })},
	{"disk_reserve_mb", "64", "embedded agent with the embedded registry: space in MB the scheduler holds in data_dir/disk-reserve (allocated blocks, root's, 0600) and gives back the moment the file system is full, so that a registry commit that found the disk full is tried again on it and goes on; the disk watcher then runs at once; made again once disk_reserve_mb plus disk_headroom_mb are free; 0: none", integer("disk_reserve_mb", func(c *Config) *int { return &c.DiskReserveMB })},
	{"isolation_cpu_quota", "false", "also cap each task and executor at its cpuCount with a CFS quota (default: CPU shares only, which divide the CPUs under contention and let idle CPUs be used; a hard cap costs start latency)", boolean("isolation_cpu_quota", func(c *Config) *bool { return &c.CPUQuota })},
	{"tenant_isolation", "auto", "embedded agent: run each namespace's tasks as an OS user of its own (from tenant_uid_range), in PID and mount namespaces of their own that hide the data directory, key files and other sandboxes (docs/tenancy.md): auto (where the scheduler runs as root; elsewhere more than one namespace or a secrets key stops the start), on (or the scheduler does not start), off (tasks run as the scheduler's user and see what it sees)", str(func(c *Config) *string { return &c.TenantIsolation })},
	{"tenant_allow_user_namespaces", "false", "embedded agent under tenant_isolation: let tasks make user namespaces (unshare -U, rootless containers); by default a seccomp filter refuses them, as they open much of the kernel to an unprivileged user", boolean("tenant_allow_user_namespaces", func(c *Config) *bool { return &c.TenantAllowUserNS })},
	{"tenant_uid_range", "1879048192-1879113727", "uids (and gids of the same numbers) given to namespaces under tenant_isolation, one each, lowest free first, recorded in data_dir/mesos/tenants.json: a range no user or container of the host uses (check /etc/subuid)", str(func(c *Config) *string { return &c.TenantUIDRange })},
	{"gc_delay", "168h", "keep the sandboxes of finished executors and tasks this long on an empty disk, less as it fills (Mesos gc_delay)", duration("gc_delay", func(c *Config) *time.Duration { return &c.GCDelay })},
	{"gc_disk_headroom", "0.1", "fraction of the disk to keep free: sandboxes may live gc_delay × (1 − headroom − disk usage) (Mesos gc_disk_headroom)", float("gc_disk_headroom", func(c *Config) *float64 { return &c.GCDiskHeadroom })},
	{"executor_cache_size", "2GiB", "bound of the app cache on each agent: least recently used packages beyond it are removed, never one in use (0: no bound)", func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return fmt.Errorf("executor_cache_size: %v", err)
		}
		c.ExecutorCacheMax = n
		return nil
	}},
	{"metrics_access", "auto", "who reads GET /metrics: auto (login when auth_users_file, oidc_issuer or metrics_token_file is set, else open), open (anyone, every namespace's job names) or login (the API's credentials or metrics_token_file's token: the admin and the token read every series, anyone else only the series of the namespaces it may read; docs/operations.md#metrics)", func(c *Config, v string) error {
		switch v = strings.TrimSpace(v); v {
		case "auto", "open", "login":
			c.MetricsAccess = v
			return nil
		}
		return fmt.Errorf("metrics_access: %q is not auto, open or login", v)
	}},
	{"max_body_bytes", "1048576", "largest accepted API request body in bytes", func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 1024 {
			return fmt.Errorf("max_body_bytes: %q must be a number >= 1024", v)
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{"package_max_bytes", "1073741824", "largest app package accepted by PUT /api/app/{appName}/package, in bytes (streamed to data_dir/packages; max_body_bytes does not apply)", func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("package_max_bytes: %q must be a positive number of bytes", v)
		}
		c.PackageMaxBytes = n
		return nil
	}},
	{"package_gc_grace", "1h", "an uploaded package no app names any more is deleted after this long (in-flight launches and peers' pulls of it still work meanwhile)", duration("package_gc_grace", func(c *Config) *time.Duration { return &c.PackageGCGrace })},
	{"offer_refuse_seconds", "5s", "how long declined offers are filtered when no work waits", duration("offer_refuse_seconds", func(c *Config) *time.Duration { return &c.OfferRefuse })},
	{"offer_hold", "1s", "keep offers this long after the last launch before declining them, so bursts launch without a revive round trip (0s: decline at once)", duration("offer_hold", func(c *Config) *time.Duration { return &c.OfferHold })},
	{"cron_jitter", "0s", "scheduler-wide jitter window: each fire of a job that sets no jitter of its own moves later by a fixed offset of the job's in [0, window), a hash of its name (0s: none; docs/jobs.md)", func(c *Config, v string) error {
		if err := duration("cron_jitter", func(c *Config) *time.Duration { return &c.CronJitter })(c, v); err != nil {
			return err
		}
		if c.CronJitter > 24*time.Hour {
			return fmt.Errorf("cron_jitter: %q is longer than 24h", v)
		}
		return nil
	}},
	{"fire_lead", "1s", "commit each cron fire at least this long before its instant (up to 5s more while commits are slow), held back until the instant, so the commit's cost does not delay the fire (0s: commit at the instant unless commits are slow)", duration("fire_lead", func(c *Config) *time.Duration { return &c.FireLead })},
	{"registry_sync", "full", "durability of the embedded registry: full fsyncs every commit (survives power loss); normal survives a killed scheduler but may lose the last commits on power loss, for lower latency", str(func(c *Config) *string { return &c.RegistrySync })},
	{"log_level", "info", "debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
	{"memory_limit", "auto", "soft limit of the scheduler's Go memory, like 900MiB (runtime/debug.SetMemoryLimit): near it the collector runs more often, trading CPU for resident memory, instead of letting the heap grow to twice what is live; auto: 90% of the memory limit of the scheduler's cgroup (a container's limit) when it has one and GOMEMLIMIT is not set; 0: Go's default (GOMEMLIMIT, else none)", func(c *Config, v string) error {
		if strings.EqualFold(strings.TrimSpace(v), "auto") {
			c.MemoryLimit, c.MemoryLimitAuto = 0, true
			return nil
		}
		n, err := parseSize(v)
		if err != nil {
			return fmt.Errorf("memory_limit: %w (or auto)", err)
		}
		c.MemoryLimit, c.MemoryLimitAuto = n, false
		return nil
	}},
	{"debug_pprof", "false", "serve Go's profiles (CPU, heap, allocations, blocking, lock contention, goroutines, execution trace) at /debug/pprof/ to admins, and sample blocking and lock contention while on", boolean("debug_pprof", func(c *Config) *bool { return &c.DebugPprof })},
}

// ErrHelp is returned when --help was asked for (usage was printed).
var ErrHelp = flag.ErrHelp

// Load reads defaults, the properties file (--config or config_file env),
// the environment and args, and validates the result.
func Load(args []string, getenv func(string) (string, bool), out io.Writer) (Config, error) {
	var c Config
	for _, s := range settings {
		if err := s.set(&c, s.def); err != nil {
			return c, err
		}
	}
	fs, flagVals, cfgFile := newFlagSet(out)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *cfgFile == "" {
		if v, ok := lookupEnv(getenv, "config_file"); ok {
			*cfgFile = v
		}
	}
	if *cfgFile != "" {
		if err := loadProperties(&c, *cfgFile); err != nil {
			return c, err
		}
	}
	for _, s := range settings {
		if v, ok := lookupEnv(getenv, s.key); ok {
			if err := s.set(&c, v); err != nil {
				return c, fmt.Errorf("environment %s", err)
			}
		}
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		if s, ok := flagVals[f.Name]; ok && ferr == nil {
			if err := s.set(&c, f.Value.String()); err != nil {
				ferr = fmt.Errorf("flag --%s: %v", f.Name, err)
			}
		}
	})
	if ferr != nil {
		return c, ferr
	}
	c.ConfigFile = *cfgFile
	return c, c.validate()
}

// lookupEnv reads key as written (http_port) or upper-case with the
// ELASTICJOB_ prefix (ELASTICJOB_HTTP_PORT). Plain upper-case names are not
// read: HOSTNAME and USER are set by every shell.
func lookupEnv(getenv func(string) (string, bool), key string) (string, bool) {
	if v, ok := getenv(key); ok {
		return v, true
	}
	return getenv("ELASTICJOB_" + strings.ToUpper(key))
}

func newFlagSet(out io.Writer) (*flag.FlagSet, map[string]setting, *string) {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(out)
	cfgFile := fs.String("config", "", "properties file with the keys below (like the original's conf/elasticjob-cloud-scheduler.properties)")
	m := map[string]setting{}
	for _, s := range settings {
		name := strings.ReplaceAll(s.key, "_", "-")
		fs.String(name, s.def, s.help+" [property/env: "+s.key+", ELASTICJOB_"+strings.ToUpper(s.key)+"]")
		m[name] = s
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: scheduler [flags]\n\nElasticJob-Cloud scheduler. Every setting comes from, in rising priority: its default,\nthe --config properties file, the environment (same name, or ELASTICJOB_ + upper case), a flag.\n\n")
		fs.PrintDefaults()
	}
	return fs, m, cfgFile
}

func loadProperties(c *Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	known := map[string]setting{}
	for _, s := range settings {
		known[s.key] = s
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxPropertyLine)
	n := 1
	for ; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a byte-order mark from Windows editors
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := cutProperty(line)
		if !ok {
			return fmt.Errorf("config file %s line %d: expected key=value", path, n)
		}
		s, ok := known[k]
		if !ok {
			return fmt.Errorf("config file %s line %d: unknown key %q (known: %s)", path, n, k, knownKeys())
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("config file %s line %d: %v", path, n, err)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("config file %s line %d: longer than %d bytes", path, n, maxPropertyLine)
	} else if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// maxPropertyLine bounds a line of the properties file.
const maxPropertyLine = 1 << 20

func cutProperty(line string) (string, string, bool) {
	i := strings.IndexAny(line, "=:")
	if i < 0 {
		return "", "", false
	}
	return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), true
}

func knownKeys() string {
	keys := make([]string, 0, len(settings))
	for _, s := range settings {
		keys = append(keys, s.key)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func (c *Config) validate() error {
	errs := c.validateClusters() // first: the checks below read the list
	errs = append(errs, c.validateAccess()...)
	errs = append(errs, c.validateStores()...)
	errs = append(errs, c.validateHost()...)
	errs = append(errs, c.validateMesos()...)
	errs = append(errs, c.validateKube()...)
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateRegistry()...)
	return errors.Join(errs...)
}

// validateAccess checks the listener, the data directory and the credentials.
func (c *Config) validateAccess() []error {
	var errs []error
	if c.HTTPPort < 0 || c.HTTPPort > 65535 {
		errs = append(errs, fmt.Errorf("http_port: %d is not a port", c.HTTPPort))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: must not be empty"))
	} else if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs // sandboxes and executors need absolute paths
	}
	if (c.AuthUsername == "") != (c.AuthPassword == "") {
		errs = append(errs, errors.New("auth_username and auth_password must be set together"))
	}
	if (c.GuestUsername == "") != (c.GuestPassword == "") {
		errs = append(errs, errors.New("auth_guest_username and auth_guest_password must be set together"))
	}
	if c.UsersFile != "" && c.AuthUsername == "" {
		errs = append(errs, errors.New("auth_users_file needs auth_username and auth_password: without an admin, access is open and every caller is the admin"))
	}
	if c.GuestUsername != "" && c.GuestUsername == c.AuthUsername {
		errs = append(errs, errors.New("auth_guest_username must differ from auth_username"))
	}
	if !c.Loopback() && c.AuthUsername == "" {
		errs = append(errs, fmt.Errorf("http_address %q is not loopback: set auth_username and auth_password (no default credentials are shipped)", c.HTTPAddress))
	}
	return errs
}

// validateStores checks the history database, the Mesos role, the queues and recovery.
func (c *Config) validateStores() []error {
	var errs []error
	switch c.RDBDriver {
	case "", "sqlite", "none", "mysql", "com.mysql.jdbc.Driver", "com.mysql.cj.jdbc.Driver":
	default:
		errs = append(errs, fmt.Errorf("event_trace_rdb_driver: %q must be sqlite, mysql or none", c.RDBDriver))
	}
	if c.IsMySQL() && c.RDBURL == "" {
		errs = append(errs, errors.New("event_trace_rdb_url: required when event_trace_rdb_driver is mysql"))
	}
	if strings.TrimSpace(c.MesosRole) == "" {
		errs = append(errs, errors.New("mesos_role: must not be empty (use * for the default role)"))
	}
	if c.ZKServers != "" && !c.SharedEngines() {
		errs = append(errs, errors.New("zk_servers: the schedulers of a cluster share one Mesos master and take over each other's tasks: set mesos_url too (on one machine, run bin/mesos-local and point mesos_url at it)"))
	}
	if c.HistoryMaxRows < 0 {
		errs = append(errs, errors.New("history_max_rows: must not be negative"))
	}
	if c.JobStateQueue < 1 {
		errs = append(errs, errors.New("job_state_queue_size: must be at least 1"))
	}
	if c.WorkflowRunsKept < 1 {
		errs = append(errs, errors.New("workflow_runs_kept: must be at least 1"))
	}
	if c.RecoveryTimeout <= 0 {
		errs = append(errs, errors.New("recovery_timeout: must be positive"))
	}
	if c.Recover != "reconnect" && c.Recover != "cleanup" {
		errs = append(errs, fmt.Errorf("recover: %q must be reconnect or cleanup", c.Recover))
	}
	return errs
}

// validateHost checks isolation, garbage collection, logging and the time zone.
func (c *Config) validateHost() []error {
	var errs []error
	switch c.Isolation {
	case "auto", "v1", "v2", "off":
	default:
		errs = append(errs, fmt.Errorf("isolation: %q must be auto, v1, v2 or off", c.Isolation))
	}
	switch c.TenantIsolation {
	case "auto", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("tenant_isolation: %q must be auto, on or off", c.TenantIsolation))
	}
	if c.SandboxDiskMB < 0 || c.DiskHeadroomMB < 0 || c.DiskReserveMB < 0 || c.NamespacePidsMax < 0 || c.NamespaceMemMB < 0 || c.NamespaceDiskMB < 0 {
		errs = append(errs, fmt.Errorf("sandbox_disk_mb %d, disk_headroom_mb %d, disk_reserve_mb %d, namespace_pids_max %d, namespace_mem_mb %d, namespace_disk_mb %d: must not be negative",
			c.SandboxDiskMB, c.DiskHeadroomMB, c.DiskReserveMB, c.NamespacePidsMax, c.NamespaceMemMB, c.NamespaceDiskMB))
	}
	if _, err := tenant.ParseRange(c.TenantUIDRange); err != nil {
		errs = append(errs, fmt.Errorf("tenant_uid_range: %w", err))
	}
	if c.GCDiskHeadroom <= 0 || c.GCDiskHeadroom >= 1 {
		errs = append(errs, fmt.Errorf("gc_disk_headroom: %v must be between 0 and 1", c.GCDiskHeadroom))
	}
	if c.GCDelay <= 0 {
		errs = append(errs, errors.New("gc_delay: must be positive"))
	}
	if c.RegistrySync != "full" && c.RegistrySync != "normal" {
		errs = append(errs, fmt.Errorf("registry_sync: %q must be full or normal", c.RegistrySync))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level: %q must be debug, info, warn or error", c.LogLevel))
	}
	c.Location = time.Local
	if c.TimeZone != "" {
		loc, err := time.LoadLocation(c.TimeZone)
		if err != nil {
			errs = append(errs, fmt.Errorf("time_zone: %q is not an IANA time zone", c.TimeZone))
		}
		c.Location = loc
	}
	return errs
}

// IsMySQL reports whether history goes to MySQL.
func (c *Config) IsMySQL() bool {
	return c.RDBDriver == "mysql" || c.RDBDriver == "com.mysql.jdbc.Driver" || c.RDBDriver == "com.mysql.cj.jdbc.Driver"
}

// Loopback reports whether the API listens only on a loopback address.
func (c *Config) Loopback() bool {
	if c.HTTPAddress == "localhost" {
		return true
	}
	ip := net.ParseIP(c.HTTPAddress)
	return ip != nil && ip.IsLoopback()
}

// ListenAddr is host:port of the API.
func (c *Config) ListenAddr() string {
	return net.JoinHostPort(c.HTTPAddress, strconv.Itoa(c.HTTPPort))
}

// Redacted returns the settings as key=value lines with secrets hidden,
// for the startup log.
func (c Config) Redacted() map[string]any {
	hide := func(s string) string {
		if s == "" {
			return ""
		}
		return "***"
	}
	return map[string]any{
		"data_dir": c.DataDir, "http": c.ListenAddr(), "mesos_url": c.MesosURLRedacted(), "zk_servers": c.ZKServers, "registry": c.RegistryKind(),
		"mesos_principal": c.Mesos.Principal, "mesos_secret": hide(c.Mesos.Secret), "mesos_checkpoint": c.Mesos.Checkpoint,
		"zk_digest": hide(c.ZKDigest), "event_trace_rdb_driver": c.RDBDriver, "event_trace_rdb_password": hide(c.RDBPassword),
		"auth_username": c.AuthUsername, "auth_password": hide(c.AuthPassword), "time_zone": c.Location.String(),
		"clusters": c.clustersRedacted(),
	}
}
