package executor

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mesostime "github.com/mesos/mesos-go/api/v1/lib/time"

	"github.com/ejcloud/elasticjob/executor/internal/bytesize"
)

// Settings is the executor's configuration: defaults, then environment,
// then flags.
type Settings struct {
	AgentEndpoint, FrameworkID, ExecutorID, Sandbox string

	CacheDir        string
	CacheMaxSize    int64         // app cache bound (least recently used beyond it evicted); 0: none
	GCDelay         time.Duration // finished tasks' directories live this long on an empty disk
	GCDiskHeadroom  float64
	MaxDownload     int64
	FetchTimeout    time.Duration
	MaxExtracted    int64
	MaxEntries      int
	KillGrace       time.Duration
	ShutdownGrace   time.Duration
	RecoveryTimeout time.Duration
	BackoffMax      time.Duration
	AckTimeout      time.Duration
	IdleTimeout     time.Duration // < 0: never exit when idle
	LogLevel        slog.Level
	// Cgroup is the container cgroup the agent put this executor in
	// ("v1:/elasticjob/<agent>/<container>", ELASTICJOB_CGROUP); "" when
	// the agent isolates nothing. Tasks get cgroups of their own below it,
	// with CgroupPidsMax processes each and a CPU quota if CgroupCPUQuota.
	Cgroup         string
	CgroupPidsMax  int64
	CgroupCPUQuota bool
	// JavaJar is the Java library for Java apps ("": beside the executor
	// binary, else JavaImageJar); JavaOpts are JVM flags for the JVMs the
	// executor starts itself (jar apps, job classes).
	JavaJar  string
	JavaOpts []string
	// Protobuf: speak protobuf to the agent (ELASTICJOB_AGENT_CODEC,
	// "protobuf" or "json"), which the embedded agent asks of the
	// executors it starts. A Mesos agent does not set it: JSON, whose
	// events are decoded tolerantly (codec.go).
	Protobuf bool
}

const usageHead = `Usage: executor [flags]

The ElasticJob-Cloud executor: a Mesos v1 HTTP executor started by a Mesos
agent (or the scheduler's embedded agent). It reads the agent's MESOS_*
environment: MESOS_AGENT_ENDPOINT, MESOS_FRAMEWORK_ID, MESOS_EXECUTOR_ID,
MESOS_SANDBOX (or MESOS_DIRECTORY), MESOS_CHECKPOINT,
MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD, MESOS_SUBSCRIPTION_BACKOFF_MAX and
MESOS_RECOVERY_TIMEOUT (default 15mins with checkpointing, else 1min: how
long to keep re-subscribing before killing the tasks and exiting). Each flag can also be set by the environment
variable named in its description; the flag wins. Durations take Go ("90s")
or Mesos ("5secs") syntax, sizes "1GiB", "512MiB" or bytes.

Flags:
`

// AgentCodecEnv names the codec the executor speaks to its agent; see
// Settings.Protobuf.
const AgentCodecEnv = "ELASTICJOB_AGENT_CODEC"

// ParseSettings reads flags and the environment. It returns flag.ErrHelp
// after printing usage to out for -h/--help.
func ParseSettings(args []string, getenv func(string) string, out io.Writer) (Settings, error) {
	s := Settings{
		AgentEndpoint: getenv("MESOS_AGENT_ENDPOINT"), FrameworkID: getenv("MESOS_FRAMEWORK_ID"),
		ExecutorID: getenv("MESOS_EXECUTOR_ID"), Sandbox: firstOf(getenv("MESOS_SANDBOX"), getenv("MESOS_DIRECTORY")),
	}
	cache, err := os.UserCacheDir()
	if err != nil { // no HOME: a Mesos agent does not pass its own environment to executors
		cache = os.TempDir()
	}
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, usageHead); fs.PrintDefaults() }
	env := func(name, def string) string { return firstOf(getenv(name), def) }
	var (
		cacheDir  = fs.String("cache-dir", env("ELASTICJOB_CACHE_DIR", filepath.Join(cache, "elasticjob-executor")), "app package cache shared by executors on this host (ELASTICJOB_CACHE_DIR)")
		cacheMax  = fs.String("cache-max-size", env("ELASTICJOB_CACHE_MAX_SIZE", "2GiB"), "evict the least recently used app packages beyond this cache size, never one in use; 0 keeps all (ELASTICJOB_CACHE_MAX_SIZE)")
		gcDelay   = fs.String("gc-delay", env("ELASTICJOB_GC_DELAY", "1weeks"), "remove finished tasks' directories from the sandbox after this long, sooner as the disk fills (ELASTICJOB_GC_DELAY)")
		headroom  = fs.Float64("gc-disk-headroom", 0.1, "fraction of the disk to keep free: finished tasks' directories may live gc-delay × (1 − headroom − disk usage) (ELASTICJOB_GC_DISK_HEADROOM)")
		maxDL     = fs.String("max-download", env("ELASTICJOB_MAX_DOWNLOAD", "1GiB"), "largest app package to download (ELASTICJOB_MAX_DOWNLOAD)")
		fetchTO   = fs.String("fetch-timeout", env("ELASTICJOB_FETCH_TIMEOUT", "10m"), "time limit on fetching a package, retries included (ELASTICJOB_FETCH_TIMEOUT)")
		maxEx     = fs.String("max-extracted", env("ELASTICJOB_MAX_EXTRACTED", "4GiB"), "largest total size an archive may expand to (ELASTICJOB_MAX_EXTRACTED)")
		maxEnt    = fs.Int("max-entries", 100_000, "most entries an archive may hold")
		killGrace = fs.String("kill-grace", env("ELASTICJOB_KILL_GRACE", env("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "5secs")), "SIGTERM to SIGKILL delay when a task is killed without a kill policy (ELASTICJOB_KILL_GRACE; default MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD)")
		ackTO     = fs.String("ack-timeout", env("ELASTICJOB_ACK_TIMEOUT", "10s"), "how long to wait for the agent to acknowledge the last updates before exiting (ELASTICJOB_ACK_TIMEOUT)")
		idleTO    = fs.String("idle-timeout", env("ELASTICJOB_EXECUTOR_IDLE_TIMEOUT", "10s"), "exit (releasing the executor's resources) after running no task for this long once it has run one; \"never\" keeps it until SHUTDOWN (ELASTICJOB_EXECUTOR_IDLE_TIMEOUT)")
		logLevel  = fs.String("log-level", env("ELASTICJOB_LOG_LEVEL", "info"), "debug, info, warn or error (ELASTICJOB_LOG_LEVEL)")
		javaJar   = fs.String("java-jar", env("ELASTICJOB_JAVA_JAR", ""), "the Java library "+JavaJarName+" for Java apps; empty: the one beside this binary, else "+JavaImageJar+" (ELASTICJOB_JAVA_JAR)")
		javaOpts  = fs.String("java-opts", env("ELASTICJOB_JAVA_OPTS", ""), "JVM flags, blank separated, for the JVMs the executor starts itself: jar apps and job classes (ELASTICJOB_JAVA_OPTS)")
	)
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	s.CacheDir, s.MaxEntries = *cacheDir, *maxEnt
	s.JavaJar, s.JavaOpts = *javaJar, strings.Fields(*javaOpts)
	var errs []error
	size := func(dst *int64, name, v string) {
		n, err := bytesize.Parse(v)
		*dst = n
		errs = append(errs, prefix(name, err))
	}
	dur := func(dst *time.Duration, name, v string) {
		d, err := parseDuration(v)
		*dst = d
		errs = append(errs, prefix(name, err))
	}
	size(&s.MaxDownload, "max-download", *maxDL)
	size(&s.CacheMaxSize, "cache-max-size", *cacheMax)
	size(&s.MaxExtracted, "max-extracted", *maxEx)
	dur(&s.FetchTimeout, "fetch-timeout", *fetchTO)
	dur(&s.GCDelay, "gc-delay", *gcDelay)
	s.GCDiskHeadroom = *headroom
	if v := getenv("ELASTICJOB_GC_DISK_HEADROOM"); v != "" && !flagSet(fs, "gc-disk-headroom") {
		h, err := strconv.ParseFloat(v, 64)
		errs = append(errs, prefix("ELASTICJOB_GC_DISK_HEADROOM", err))
		s.GCDiskHeadroom = h
	}
	if s.GCDiskHeadroom < 0 || s.GCDiskHeadroom >= 1 {
		errs = append(errs, fmt.Errorf("gc-disk-headroom: %v must be in [0, 1)", s.GCDiskHeadroom))
	}
	dur(&s.KillGrace, "kill-grace", *killGrace)
	dur(&s.AckTimeout, "ack-timeout", *ackTO)
	if *idleTO == "never" {
		s.IdleTimeout = -1
	} else {
		dur(&s.IdleTimeout, "idle-timeout", *idleTO)
	}
	dur(&s.ShutdownGrace, "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", env("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "5secs"))
	dur(&s.BackoffMax, "MESOS_SUBSCRIPTION_BACKOFF_MAX", env("MESOS_SUBSCRIPTION_BACKOFF_MAX", "2secs"))
	// A checkpointing framework's agent recovers its executors, so wait as
	// long as Mesos does; otherwise a restarted agent never comes back for
	// us, so give up sooner.
	recovery := "1mins"
	if b, _ := strconv.ParseBool(getenv("MESOS_CHECKPOINT")); b {
		recovery = "15mins"
	}
	dur(&s.RecoveryTimeout, "MESOS_RECOVERY_TIMEOUT", env("MESOS_RECOVERY_TIMEOUT", recovery))
	errs = append(errs, prefix("log-level", s.LogLevel.UnmarshalText([]byte(*logLevel))))
	errs = append(errs, s.parseCgroup(getenv))
	switch v := getenv(AgentCodecEnv); v {
	case "", "json":
	case "protobuf":
		s.Protobuf = true
	default:
		errs = append(errs, fmt.Errorf("%s: %q is not a codec: want json or protobuf", AgentCodecEnv, v))
	}
	for _, name := range []string{"MESOS_AGENT_ENDPOINT", "MESOS_FRAMEWORK_ID", "MESOS_EXECUTOR_ID"} {
		if getenv(name) == "" {
			errs = append(errs, fmt.Errorf("%s is not set (the executor is started by a Mesos agent)", name))
		}
	}
	if s.Sandbox == "" {
		errs = append(errs, errors.New("MESOS_SANDBOX is not set (the executor is started by a Mesos agent)"))
	}
	return s, errors.Join(errs...)
}

// parseDuration accepts Go ("90s") and Mesos ("5secs", "2mins") syntax.
func parseDuration(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	d, err := mesostime.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", v)
	}
	return d, nil
}

func prefix(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseCgroup reads ELASTICJOB_CGROUP, ELASTICJOB_CGROUP_PIDS_MAX (0: no
// limit) and ELASTICJOB_CGROUP_CPU_QUOTA (default false), set by the
// embedded agent when it isolates executors.
func (s *Settings) parseCgroup(getenv func(string) string) error {
	s.Cgroup = getenv("ELASTICJOB_CGROUP")
	if v := getenv("ELASTICJOB_CGROUP_PIDS_MAX"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("ELASTICJOB_CGROUP_PIDS_MAX: %q is not a process count", v)
		}
		s.CgroupPidsMax = n
	}
	if v := getenv("ELASTICJOB_CGROUP_CPU_QUOTA"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("ELASTICJOB_CGROUP_CPU_QUOTA: %q is not true or false", v)
		}
		s.CgroupCPUQuota = b
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
