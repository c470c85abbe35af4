package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// options is the harness's configuration: what every scenario shares, and
// one embedded struct per scenario family, each registering its own flags
// (its fields stay reachable as o.field through embedding).
type options struct {
	only map[string]bool
	env

	loadOptions
	latencyOptions
	throughputOptions
	packageOptions
	haOptions
	workflowOptions
	goBenchOptions
	javaOptions
	simOptions
	kubeOptions
	kubeScaleOptions
	teamsOptions
}

// env is what every scenario reads: where the binaries are, whether to keep
// the data directories, and how many registration clients to run.
type env struct {
	binDir       string
	keep         bool
	executorPath string
	workers      int // concurrent registration clients (register, cluster-sim, ha, kube-scale)
}

// part is one scenario family's options: flags registers its flags on fs,
// parse turns what needs it (lists, sizes) into values once fs is parsed.
type part interface {
	flags(fs *flag.FlagSet)
	parse() error
}

func (o *options) parts() []part {
	return []part{&o.loadOptions, &o.latencyOptions, &o.throughputOptions, &o.packageOptions, &o.haOptions, &o.workflowOptions,
		&o.goBenchOptions, &o.javaOptions, &o.simOptions, &o.kubeOptions, &o.kubeScaleOptions, &o.teamsOptions}
}

// parseOptions registers every flag on fs, parses args and checks them.
func parseOptions(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	only := fs.String("only", "", "comma-separated scenarios to run: "+strings.Join(scenarios, ", ")+" (default: all; producer includes register)")
	fs.StringVar(&o.binDir, "bin", "bin", "directory holding the scheduler and executor binaries (make build)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary data directories (and scheduler logs)")
	fs.IntVar(&o.workers, "workers", 24, "concurrent registration clients (keep-alive)")
	fs.StringVar(&logLevel, "log-level", "warn", "--log-level of the schedulers and mesos-local processes the harness starts (their logs are kept with -keep)")
	for _, p := range o.parts() {
		p.flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, p := range o.parts() {
		if err := p.parse(); err != nil {
			return o, err
		}
	}
	var err error
	if o.only, err = parseOnly(*only); err != nil {
		return o, err
	}
	if abs, err := filepath.Abs(o.binDir); err == nil {
		o.binDir = abs
	}
	o.executorPath = filepath.Join(o.binDir, "executor")
	return o, nil
}

// parseOnly reads -only: known scenario names, every scenario when empty.
func parseOnly(list string) (map[string]bool, error) {
	only := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			known := false
			for _, k := range scenarios {
				known = known || k == s
			}
			if !known {
				return nil, fmt.Errorf("unknown scenario %q (want %s)", s, strings.Join(scenarios, ", "))
			}
			only[s] = true
		}
	}
	if len(only) == 0 {
		for _, s := range scenarios {
			only[s] = true
		}
	}
	return only, nil
}

// set reads a comma-separated list into a set.
func set(list string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		m[strings.TrimSpace(s)] = true
	}
	return m
}

// loadOptions: the register and producer scenarios.
type loadOptions struct {
	jobs   int
	window time.Duration
	settle time.Duration
}

func (p *loadOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.jobs, "jobs", 100_000, "jobs to register (register/producer)")
	fs.DurationVar(&p.window, "window", 75*time.Second, "producer observation window")
	fs.DurationVar(&p.settle, "settle", 5*time.Second, "pause between registration and the producer window")
}

func (p *loadOptions) parse() error { return nil }

// latencyOptions: the latency scenario's series.
type latencyOptions struct {
	triggers int
	gap      time.Duration
}

func (p *latencyOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.triggers, "triggers", 200, "sequential triggers per latency series")
	fs.DurationVar(&p.gap, "gap", 50*time.Millisecond, "idle pause between sequential triggers (latency)")
}

func (p *latencyOptions) parse() error { return nil }

// throughputOptions: the throughput scenario.
type throughputOptions struct {
	tputJobs     int
	tputApps     int
	tputRate     int
	tputPaced    int
	tputCronOnly bool
	tputWindow   time.Duration
	tputProfile  bool
}

func (p *throughputOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.tputJobs, "tput-jobs", 200, "one-shard jobs in the throughput scenario")
	fs.IntVar(&p.tputApps, "tput-apps", 4, "apps (so executors) the throughput jobs are spread over")
	fs.IntVar(&p.tputRate, "tput-rate", 800, "API triggers per second across the throughput jobs (on top of their every-second crons)")
	fs.BoolVar(&p.tputCronOnly, "tput-cron-only", true, "throughput: then the same jobs on their crons alone, without the API trigger stream (CPU per execution without the trigger requests)")
	fs.IntVar(&p.tputPaced, "tput-paced", 300, "throughput: then this many jobs without cron, triggered once a second each, for ready → ACCEPT at that rate (0: skip)")
	fs.DurationVar(&p.tputWindow, "tput-window", 30*time.Second, "throughput measurement window")
	fs.BoolVar(&p.tputProfile, "tput-profile", false, "throughput: CPU-profile the scheduler over the window and print the top of it (go tool pprof)")
}

func (p *throughputOptions) parse() error { return nil }

// packageOptions: the package scenario.
type packageOptions struct{ packageMB int }

func (p *packageOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.packageMB, "package-mb", 100, "payload size in MB of the package scenario's upload")
}

func (p *packageOptions) parse() error { return nil }

// haOptions: the ha scenario.
type haOptions struct {
	haKills     int // leader kills at a 2 s session timeout
	haKillsSlow int // leader kills at the default 15 s
	haKillsEtcd int // leader kills on the etcd shape
	haBurn      time.Duration
	haWrites    int
	haJobs      int
}

func (p *haOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.haKills, "ha-kills", 5, "leader kills at a 2 s session timeout (ha)")
	fs.IntVar(&p.haKillsSlow, "ha-kills-default", 2, "leader kills at the default 15 s session timeout (ha)")
	fs.IntVar(&p.haKillsEtcd, "ha-kills-etcd", 20, "leader kills on the etcd shape, a member in each scheduler (ha; 0 skips it)")
	fs.DurationVar(&p.haBurn, "ha-burn", 30*time.Second, "after the etcd shape's kills, run two CPU burners per core this long and count elections (ha; 0 skips it)")
	fs.IntVar(&p.haWrites, "ha-writes", 300, "sequential writes each to the leader and to a standby (ha)")
	fs.IntVar(&p.haJobs, "ha-jobs", 10_000, "job registrations on the ZooKeeper registry through the leader, and as many through a standby (ha)")
}

func (p *haOptions) parse() error { return nil }

// workflowOptions: the workflow scenario.
type workflowOptions struct {
	wfRuns       int
	wfConcurrent int
}

func (p *workflowOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.wfRuns, "wf-runs", 30, "sequential runs of the 10-node chain (the fan-out gets a quarter) in the workflow scenario")
	fs.IntVar(&p.wfConcurrent, "wf-concurrent", 200, "concurrent runs of the 10-node chain in the workflow scenario")
}

func (p *workflowOptions) parse() error { return nil }

// goBenchOptions: the packages' Go benchmarks.
type goBenchOptions struct{ benchtime string }

func (p *goBenchOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.benchtime, "benchtime", "", "-benchtime for the Go benchmarks (default: per package, short)")
}

func (p *goBenchOptions) parse() error { return nil }
