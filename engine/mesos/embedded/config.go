package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/sandboxgc"
)

// Config configures a Cluster. Zero values select the defaults documented
// on each field.
type Config struct {
	Addr     string // listen address, default "127.0.0.1:0"
	WorkDir  string // required; holds the agent sandboxes
	CPUs     float64
	MemMB    float64
	DiskMB   float64 // 0 = this machine's (NumCPU, MemTotal, DefaultDiskMB)
	Ports    string  // offered port range, default "[31000-32000]"
	Hostname string  // default os.Hostname

	// Principal and Secret, when Secret is set, are the framework
	// credential: HTTP Basic Principal:Secret is required on the scheduler
	// API (SUBSCRIBE and every call), the operator API and the read
	// endpoints (/state, /slaves, /files/read, /metrics/snapshot); a
	// request without it is refused 401 (auth.go). Empty: open, as a Mesos
	// master without --authenticate_http_frameworks. Executors always
	// authenticate with a token of their own.
	Principal, Secret string

	HeartbeatInterval     time.Duration // scheduler HEARTBEAT period, default 15s
	ExecutorShutdownGrace time.Duration // default 5s
	// ExecutorRegistrationTimeout kills executors that do not subscribe in
	// time (Mesos --executor_registration_timeout), default 60s.
	ExecutorRegistrationTimeout time.Duration
	// UpdateRetryInterval is the first retry of an unacknowledged status
	// update; it doubles up to 10 minutes. Default 10s.
	UpdateRetryInterval time.Duration
	Logger              *slog.Logger

	// Recover says what a start does with the executors an earlier run
	// of this work directory left running (Mesos --recover):
	// RecoverReconnect (default) takes them over, RecoverCleanup shuts
	// them down (Cleaned is closed once they are gone) and accepts no
	// framework.
	Recover string
	// RecoveryTimeout is how long an executor of a checkpointing
	// framework keeps its tasks running while it cannot reach the agent
	// (MESOS_RECOVERY_TIMEOUT, Mesos --recovery_timeout): an agent that
	// is back within it takes the executor over; after it the executor
	// kills its tasks and exits. Default DefaultRecoveryTimeout.
	RecoveryTimeout time.Duration
	// ExecutorReregistrationTimeout is how long executors recovered at
	// start have to subscribe again before they are killed and their
	// tasks reported lost (Mesos --executor_reregistration_timeout).
	// Default 10s: executors retry at most every 2s.
	ExecutorReregistrationTimeout time.Duration
	// Process is what users call the process the agent runs in
	// ("scheduler", "mesos-local"), named in the messages about its
	// restarts; default "agent".
	Process string

	// Isolation enforces executors' and tasks' cpus and mem with cgroups:
	// IsolationAuto ("" too: v2, else v1, else none with one warning),
	// IsolationV1 or IsolationV2 (that mode or Start fails), IsolationOff.
	Isolation string
	// CgroupsRoot is the group below the hierarchy root that holds the
	// agents' groups, default "elasticjob".
	CgroupsRoot string
	// PidsMax limits the processes (and threads) of each task and of the
	// executor itself; 0 selects DefaultPidsMax, negative means no limit.
	PidsMax int64
	// CPUQuota caps each executor and task at its cpus with a CFS quota
	// (Mesos --cgroups_enable_cfs). Without it (the default, as in Mesos)
	// CPU shares divide the CPUs under contention and idle CPUs may be
	// used: a hard cap costs start latency (a task with cpus 0.01 gets
	// 1 ms of CPU per 100 ms period).
	CPUQuota bool
	// NamespacePidsMax and NamespaceMemMB cap all of one tenant's
	// executors and tasks together under Tenancy (a group of the tenant's
	// above its containers, nsgroups.go); 0: no cap.
	NamespacePidsMax int64
	NamespaceMemMB   int64
	// NamespaceDiskMB caps what one tenant's live sandboxes hold together
	// (diskwatch.go); 0: no cap.
	NamespaceDiskMB int64
	// NamespaceCaps, when set, gives a tenant's own caps (its namespace
	// record's, the three above where it sets none), asked at each of its
	// executors' starts and each disk pass; nil: the three above for all.
	NamespaceCaps func(tenant string) NamespaceCaps
	// Tenancy, when set, runs each tenant's executors as an OS user of
	// its own in PID and mount namespaces of their own (tenancy.go).
	Tenancy *Tenancy

	// GCDelay is how long the sandbox of a terminated executor is kept
	// when the disk is empty (shorter as it fills, see sandboxgc.MaxAge);
	// default sandboxgc.DefaultDelay (a week).
	GCDelay time.Duration
	// GCDiskHeadroom is the fraction of the disk to keep free, in [0, 1);
	// 0 selects sandboxgc.DefaultHeadroom.
	GCDiskHeadroom float64
	// DiskWatchInterval is how often sandboxes are collected (default a
	// minute).
	DiskWatchInterval time.Duration
	// SandboxDiskMB limits a live sandbox whose executor and tasks declare
	// no disk (0: no limit); SandboxDiskWatch is how often sandboxes are
	// measured (default DefaultSandboxDiskWatch); DiskHeadroomMB is the
	// space kept free on the work directory's file system, the largest
	// sandbox's executor killed below it (0: none). DiskFree measures that
	// space (default statfs; tests inject it). See diskwatch.go.
	SandboxDiskMB    int64
	SandboxDiskWatch time.Duration
	DiskHeadroomMB   int64
	DiskFree         func(path string) (int64, error)
	// Clock dates terminated sandboxes and drives collection (default the
	// system clock); DiskUsage measures the work directory's file system
	// (default sandboxgc.DiskUsage). Tests inject both.
	Clock     clock.Clock
	DiskUsage func(path string) (float64, error)

	// Sim, for tests and benchmarks only, replaces the real agent with
	// simulated agents whose tasks run no process (see SimConfig); the
	// simulated tasks' durations follow Clock. Isolation is off.
	Sim *SimConfig

	mountinfo string // the mount table cgroups are looked up in (tests)
}

// DefaultPidsMax is Config.PidsMax when zero.
const DefaultPidsMax = 4096

// DefaultDiskMB is the disk offered when Config.DiskMB is zero.
const DefaultDiskMB = 10240

// Config.Recover modes.
const (
	RecoverReconnect = "reconnect" // take over the executors an earlier run left
	RecoverCleanup   = "cleanup"   // shut them down
)

// DefaultRecoveryTimeout is Config.RecoveryTimeout when zero (Mesos'
// default).
const DefaultRecoveryTimeout = 15 * time.Minute

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("local: invalid config")

func (c Config) withDefaults() (Config, error) {
	if c.WorkDir == "" {
		return c, fmt.Errorf("%w: WorkDir is required", ErrConfig)
	}
	abs, err := filepath.Abs(c.WorkDir)
	if err != nil {
		return c, fmt.Errorf("%w: WorkDir: %v", ErrConfig, err)
	}
	c.WorkDir = abs // executors run in their sandbox: paths must not be relative
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Secret != "" && c.Principal == "" {
		return c, fmt.Errorf("%w: Secret needs a Principal", ErrConfig)
	}
	if c.CPUs == 0 {
		c.CPUs = float64(runtime.NumCPU())
	}
	if c.MemMB == 0 {
		c.MemMB = machineMemMB()
	}
	if c.DiskMB == 0 {
		c.DiskMB = DefaultDiskMB
	}
	if c.Ports == "" {
		c.Ports = "[31000-32000]"
	}
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		c.Hostname = h
	}
	c.HeartbeatInterval = durationOr(c.HeartbeatInterval, 15*time.Second)
	c.ExecutorShutdownGrace = durationOr(c.ExecutorShutdownGrace, 5*time.Second)
	c.ExecutorRegistrationTimeout = durationOr(c.ExecutorRegistrationTimeout, time.Minute)
	c.UpdateRetryInterval = durationOr(c.UpdateRetryInterval, 10*time.Second)
	c.RecoveryTimeout = durationOr(c.RecoveryTimeout, DefaultRecoveryTimeout)
	c.ExecutorReregistrationTimeout = durationOr(c.ExecutorReregistrationTimeout, 10*time.Second)
	switch c.Recover {
	case "":
		c.Recover = RecoverReconnect
	case RecoverReconnect, RecoverCleanup:
	default:
		return c, fmt.Errorf("%w: Recover %q must be reconnect or cleanup", ErrConfig, c.Recover)
	}
	if c.Process == "" {
		c.Process = "agent"
	}
	switch c.Isolation {
	case "":
		c.Isolation = IsolationAuto
	case IsolationAuto, IsolationV1, IsolationV2, IsolationOff:
	default:
		return c, fmt.Errorf("%w: Isolation %q must be auto, v1, v2 or off", ErrConfig, c.Isolation)
	}
	if c.CgroupsRoot == "" {
		c.CgroupsRoot = "elasticjob"
	}
	if err := validateCgroupsRoot(c.CgroupsRoot); err != nil {
		return c, err
	}
	c.GCDelay = durationOr(c.GCDelay, sandboxgc.DefaultDelay)
	c.DiskWatchInterval = durationOr(c.DiskWatchInterval, DefaultDiskWatchInterval)
	if c.GCDiskHeadroom == 0 {
		c.GCDiskHeadroom = sandboxgc.DefaultHeadroom
	}
	if c.GCDiskHeadroom < 0 || c.GCDiskHeadroom >= 1 {
		return c, fmt.Errorf("%w: GCDiskHeadroom %v must be in [0, 1)", ErrConfig, c.GCDiskHeadroom)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.DiskUsage == nil {
		c.DiskUsage = sandboxgc.DiskUsage
	}
	if c.DiskFree == nil {
		c.DiskFree = diskFree
	}
	c.SandboxDiskWatch = durationOr(c.SandboxDiskWatch, DefaultSandboxDiskWatch)
	if c.SandboxDiskMB < 0 || c.DiskHeadroomMB < 0 || c.NamespacePidsMax < 0 || c.NamespaceMemMB < 0 || c.NamespaceDiskMB < 0 {
		return c, fmt.Errorf("%w: SandboxDiskMB, DiskHeadroomMB, NamespacePidsMax, NamespaceMemMB and NamespaceDiskMB must not be negative", ErrConfig)
	}
	if c.PidsMax == 0 {
		c.PidsMax = DefaultPidsMax
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.CPUs < 0 || c.MemMB < 0 || c.DiskMB < 0 {
		return c, fmt.Errorf("%w: negative resources", ErrConfig)
	}
	if c.Sim != nil {
		sim, err := c.Sim.withDefaults()
		if err != nil {
			return c, err
		}
		c.Sim = &sim
		c.Isolation = IsolationOff // no process to confine
		c.Tenancy = nil
	}
	return c, nil
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// machineMemMB reads MemTotal from /proc/meminfo; 1024 when unavailable.
func machineMemMB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 1024
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err == nil && kb > 0 {
				return float64(int64(kb / 1024))
			}
		}
	}
	return 1024
}

// parsePorts parses "[31000-32000, 33000-33010]" into ranges.
func parsePorts(s string) ([][2]uint64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out [][2]uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			hi = lo
		}
		b, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		e, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		if err1 != nil || err2 != nil || e < b {
			return nil, fmt.Errorf("%w: bad port range %q", ErrConfig, part)
		}
		out = append(out, [2]uint64{b, e})
	}
	return out, nil
}

// mesosDuration renders d in Mesos duration syntax, e.g. "5secs".
func mesosDuration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%dsecs", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	default:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	}
}

// validateCgroupsRoot accepts a relative path of plain names.
func validateCgroupsRoot(root string) error {
	for _, part := range strings.Split(strings.Trim(root, "/"), "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w: CgroupsRoot %q must be a path of names below the hierarchy root", ErrConfig, root)
		}
	}
	return nil
}
