// Command bench measures the scheduler end to end: it starts real
// bin/scheduler processes (own temporary data directories, free loopback
// ports), drives them through the REST API and reads their /metrics and
// /proc, then prints the figures next to their targets. It also runs the
// packages' Go benchmarks. Figures are measurements, never pass/fail
// assertions: the exit status reflects only whether the harness could run.
//
//	go run ./cmd/ejbench                      # every scenario (scripts/bench.sh)
//	go run ./cmd/ejbench -only producer       # one or more of: register, producer,
//	                                    # latency, throughput, package, apply, ha, workflow,
//	                                    # gobench, cluster-sim (-sim-store embedded|zk|both), kube,
//	                                    # kube-scale (-kube-scale-*: 1,000 kwok nodes), java,
//	                                    # teams (-teams-*: namespaces' fires under others' bursts)
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type options struct {
	only          map[string]bool
	binDir        string
	keep          bool
	jobs          int
	workers       int
	window        time.Duration
	settle        time.Duration
	triggers      int
	gap           time.Duration
	tputJobs      int
	tputApps      int
	tputRate      int
	tputPaced     int
	tputCronOnly  bool
	tputWindow    time.Duration
	benchtime     string
	executorPath  string
	schedulerArgs []string
	packageMB     int
	haKills       int // leader kills at a 2 s session timeout
	haKillsSlow   int // leader kills at the default 15 s
	haKillsEtcd   int // leader kills on the etcd shape
	haBurn        time.Duration
	haWrites      int
	haJobs        int
	wfRuns        int
	wfConcurrent  int
	javaBefore    string // java: a bin directory of the code before, run alternately with binDir's
	javaVariants  string // java: the variants run alternately
	javaDaemon    bool   // java: the DAEMON tick too

	simStore       string // cluster-sim: embedded, zk or both
	simZK          string
	simZKEnsemble  string
	simStandby     bool
	simTakeover    bool
	simAgents      int
	simAgentCPUs   float64
	simAgentMemMB  float64
	simDuration    string
	simFailRatio   float64
	simJobs        int
	simApps        int
	simRegisterFor time.Duration
	simWarmup      time.Duration
	simWindow      time.Duration
	simProfile     bool
	tputProfile    bool
	simMasterLoad  time.Duration

	kubeParts   map[string]bool // kube: which parts run
	kubeRounds  int             // kube: executions of the job the CPU per pod is measured over
	kubeShards  int             // kube: its shards
	kubeProfile bool
	kubeArgs    []string
	kubeBindN   []int // kube binding: the job sizes

	ksNodes, ksNodeCPUs, ksNodeMemGiB int // kube-scale: kwok nodes and their size
	ksJobs, ksPeriod                  int // kube-scale: jobs, and the seconds between a job's fires
	ksWarmup, ksWindow, ksGrace       time.Duration
	ksTimeout                         time.Duration
	ksSides                           map[string]bool
	ksKwok                            string
	ksLimits                          cpOptions
	ksProfile                         bool
	ksArgs                            []string

	teamsBefore        string          // teams: a bin dir of the code before, run alternately with binDir's
	teamsParts         map[string]bool // teams: two-team, whole-guarantee, weights
	teamsRepeats       int
	teamsCPUs          float64
	teamsBurstMax      time.Duration
	teamsWeightsWindow time.Duration
}

var scenarios = []string{"register", "producer", "latency", "throughput", "package", "apply", "ha", "workflow", "gobench", "cluster-sim", "kube", "kube-scale", "java", "teams", "backfill"}

func main() {
	var o options
	only := flag.String("only", "", "comma-separated scenarios to run: "+strings.Join(scenarios, ", ")+" (default: all; producer includes register)")
	flag.StringVar(&o.binDir, "bin", "bin", "directory holding the scheduler and executor binaries (make build)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary data directories (and scheduler logs)")
	flag.StringVar(&logLevel, "log-level", "warn", "--log-level of the schedulers and mesos-local processes the harness starts (their logs are kept with -keep)")
	flag.IntVar(&o.jobs, "jobs", 100_000, "jobs to register (register/producer)")
	flag.IntVar(&o.workers, "workers", 24, "concurrent registration clients (keep-alive)")
	flag.DurationVar(&o.window, "window", 75*time.Second, "producer observation window")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "pause between registration and the producer window")
	flag.IntVar(&o.triggers, "triggers", 200, "sequential triggers per latency series")
	flag.DurationVar(&o.gap, "gap", 50*time.Millisecond, "idle pause between sequential triggers (latency)")
	flag.IntVar(&o.tputJobs, "tput-jobs", 200, "one-shard jobs in the throughput scenario")
	flag.IntVar(&o.tputApps, "tput-apps", 4, "apps (so executors) the throughput jobs are spread over")
	flag.IntVar(&o.tputRate, "tput-rate", 800, "API triggers per second across the throughput jobs (on top of their every-second crons)")
	flag.BoolVar(&o.tputCronOnly, "tput-cron-only", true, "throughput: then the same jobs on their crons alone, without the API trigger stream (CPU per execution without the trigger requests)")
	flag.IntVar(&o.tputPaced, "tput-paced", 300, "throughput: then this many jobs without cron, triggered once a second each, for ready → ACCEPT at that rate (0: skip)")
	flag.DurationVar(&o.tputWindow, "tput-window", 30*time.Second, "throughput measurement window")
	flag.IntVar(&o.packageMB, "package-mb", 100, "payload size in MB of the package scenario's upload")
	flag.IntVar(&o.wfRuns, "wf-runs", 30, "sequential runs of the 10-node chain (the fan-out gets a quarter) in the workflow scenario")
	flag.IntVar(&o.wfConcurrent, "wf-concurrent", 200, "concurrent runs of the 10-node chain in the workflow scenario")
	flag.StringVar(&o.javaBefore, "java-before", "", "java: a bin directory built from the code before (scheduler, executor, elasticjob-cloud-executor.jar), whose jobs run alternately with -bin's: git worktree add /tmp/before <commit> && make -C /tmp/before build")
	flag.StringVar(&o.javaVariants, "java-variants", "after,isolation-off", "java: variants run alternately, comma-separated: after (-bin), isolation-off (-bin with isolation off: the task's JVM outside a cgroup of its own), tuned (-bin with executor_java_opts "+javaTuning+"), relocation-off (-bin with executor_java_opts "+javaNoRelocation+"); before is added with -java-before")
	flag.BoolVar(&o.javaDaemon, "java-daemon", true, "java: also a DAEMON job's ticks (21 s per variant)")
	flag.StringVar(&o.benchtime, "benchtime", "", "-benchtime for the Go benchmarks (default: per package, short)")
	flag.IntVar(&o.haKills, "ha-kills", 5, "leader kills at a 2 s session timeout (ha)")
	flag.IntVar(&o.haKillsSlow, "ha-kills-default", 2, "leader kills at the default 15 s session timeout (ha)")
	flag.IntVar(&o.haKillsEtcd, "ha-kills-etcd", 20, "leader kills on the etcd shape, a member in each scheduler (ha; 0 skips it)")
	flag.DurationVar(&o.haBurn, "ha-burn", 30*time.Second, "after the etcd shape's kills, run two CPU burners per core this long and count elections (ha; 0 skips it)")
	flag.IntVar(&o.haWrites, "ha-writes", 300, "sequential writes each to the leader and to a standby (ha)")
	flag.IntVar(&o.haJobs, "ha-jobs", 10_000, "job registrations on the ZooKeeper registry through the leader, and as many through a standby (ha)")
	flag.StringVar(&o.simStore, "sim-store", "both", "cluster-sim registries, comma-separated: embedded, zk, zk-ensemble; both = embedded,zk; all = the three (zk needs -sim-zk, zk-ensemble -sim-zk-ensemble)")
	flag.StringVar(&o.simZK, "sim-zk", os.Getenv("EJ_TEST_ZK"), "cluster-sim: ZooKeeper servers host:port for the zk variant (default $EJ_TEST_ZK)")
	flag.StringVar(&o.simZKEnsemble, "sim-zk-ensemble", os.Getenv("EJ_TEST_ZK_ENSEMBLE"), "cluster-sim: the 3-server ensemble host:port,… for the zk-ensemble variant (default $EJ_TEST_ZK_ENSEMBLE; scripts/services.sh start-ensemble DIR)")
	flag.BoolVar(&o.simStandby, "sim-standby", true, "cluster-sim: the ZooKeeper variants run a standby scheduler beside the leader (its registry copy's lag is reported)")
	flag.BoolVar(&o.simTakeover, "sim-takeover", true, "cluster-sim: after a ZooKeeper variant's window, kill -9 the leader and time the standby's first launch")
	flag.IntVar(&o.simAgents, "sim-agents", 1000, "cluster-sim: simulated agents (mesos-local --sim-agents)")
	flag.Float64Var(&o.simAgentCPUs, "sim-agent-cpus", 8, "cluster-sim: CPUs per simulated agent")
	flag.Float64Var(&o.simAgentMemMB, "sim-agent-mem-mb", 32768, "cluster-sim: memory per simulated agent in MB")
	flag.StringVar(&o.simDuration, "sim-task-duration", "2s-5s", "cluster-sim: simulated task run time, d or min-max")
	flag.Float64Var(&o.simFailRatio, "sim-fail-ratio", 0, "cluster-sim: share of simulated tasks that fail")
	flag.IntVar(&o.simJobs, "sim-jobs", 100_000, "cluster-sim: jobs to register (1-10 shards each, crons spread over the minute)")
	flag.IntVar(&o.simApps, "sim-apps", 10, "cluster-sim: apps the jobs are spread over (one executor per app and agent)")
	flag.DurationVar(&o.simRegisterFor, "sim-register-for", 100*time.Second, "cluster-sim: bound on registration (the run goes on with the jobs registered by then)")
	flag.DurationVar(&o.simWarmup, "sim-warmup", 10*time.Second, "cluster-sim: pause between registration and the window")
	flag.DurationVar(&o.simWindow, "sim-window", 3*time.Minute, "cluster-sim: measurement window")
	flag.BoolVar(&o.tputProfile, "tput-profile", false, "throughput: CPU-profile the scheduler over the window and print the top of it (go tool pprof)")
	flag.BoolVar(&o.simProfile, "sim-profile", false, "cluster-sim: CPU-profile mesos-local and the scheduler, take the scheduler's heap profile at the window's end, and print the top of each (go tool pprof)")
	flag.DurationVar(&o.simMasterLoad, "sim-master-load", 20*time.Second, "cluster-sim: drive a simulated mesos-local with a minimal framework this long first, for the master's own ceiling (0: skip)")
	kubeParts := flag.String("kube-parts", "floor,job,ours,cpu,rate,cron,binding", "kube: the parts to run (floor: pods by hand, job: an Indexed Job, ours: our trigger, cpu: the scheduler's CPU per pod, rate: pods per second, cron: a cron fire against a CronJob, binding: 3 and 20 shards in both binding modes against Indexed Jobs; timeline, not by default: where 20 pods' time to Running goes, pod by pod, logged)")
	flag.IntVar(&o.kubeRounds, "kube-cpu-rounds", 5, "kube: executions of a job the scheduler's CPU per pod is measured over")
	flag.IntVar(&o.kubeShards, "kube-cpu-shards", 3, "kube: the shards of that job")
	kubeBindN := flag.String("kube-binding-shards", "3,20", "kube: the binding part's job sizes, comma-separated")
	kubeArgs := flag.String("kube-scheduler-args", "", "kube: more flags for the scheduler, space-separated (e.g. \"--registry-sync normal\" to see what the fsyncs cost)")
	flag.BoolVar(&o.kubeProfile, "kube-profile", false, "kube: CPU-profile the scheduler over the CPU-per-pod rounds and print the top of it (go tool pprof)")
	flag.IntVar(&o.ksNodes, "kube-scale-nodes", 1000, "kube-scale: kwok nodes")
	flag.IntVar(&o.ksNodeCPUs, "kube-scale-node-cpus", 32, "kube-scale: CPUs of each kwok node")
	flag.IntVar(&o.ksNodeMemGiB, "kube-scale-node-mem-gib", 128, "kube-scale: memory of each kwok node in GiB")
	flag.IntVar(&o.ksJobs, "kube-scale-jobs", 10_000, "kube-scale: jobs (1-10 shards each)")
	flag.IntVar(&o.ksPeriod, "kube-scale-period", 3600, "kube-scale: seconds between a job's fires (divides a minute, or whole minutes dividing an hour); the jobs' offsets spread over it")
	flag.DurationVar(&o.ksWarmup, "kube-scale-warmup", 20*time.Second, "kube-scale: load before each side's window")
	flag.DurationVar(&o.ksWindow, "kube-scale-window", time.Minute, "kube-scale: each side's measurement window")
	flag.DurationVar(&o.ksGrace, "kube-scale-grace", 20*time.Second, "kube-scale: wait after the window for the pods of its fires")
	flag.DurationVar(&o.ksTimeout, "kube-scale-timeout", 20*time.Minute, "kube-scale: bound on the whole scenario")
	ksSides := flag.String("kube-scale-sides", "ours,jobs", "kube-scale: the sides to run (ours, jobs)")
	flag.StringVar(&o.ksKwok, "kube-scale-kwok", "", "kube-scale: a kwok binary to use instead of building "+kwokModule)
	ksLimits := flag.String("kube-scale-their-limits", "", "kube-scale: client QPS/burst of kube-controller-manager and kube-scheduler, e.g. 100/200 (default: theirs, 20/30 and 50/100)")
	flag.BoolVar(&o.ksProfile, "kube-scale-profile", false, "kube-scale: CPU-profile our scheduler over its window and print the top of it")
	ksArgs := flag.String("kube-scale-scheduler-args", "", "kube-scale: more flags for our scheduler, space-separated")
	flag.StringVar(&o.teamsBefore, "teams-before", "", "teams: a bin directory built from the code before, run alternately with -bin's: git worktree add /tmp/before <commit> && make -C /tmp/before build")
	teamsParts := flag.String("teams-parts", "two-team,whole-guarantee,weights", "teams: the scenarios to run")
	flag.IntVar(&o.teamsRepeats, "teams-repeats", 1, "teams: runs of each scenario (per side)")
	flag.Float64Var(&o.teamsCPUs, "teams-cpus", 2, "teams: CPUs the embedded agent offers (--embedded-cpus)")
	flag.DurationVar(&o.teamsBurstMax, "teams-burst-max", 3*time.Minute, "teams: bound on a burst's runs")
	flag.DurationVar(&o.teamsWeightsWindow, "teams-weights-window", 5*time.Minute, "teams: the weights scenario's measurement window")
	flag.Parse()
	o.teamsParts = map[string]bool{}
	for _, s := range strings.Split(*teamsParts, ",") {
		o.teamsParts[strings.TrimSpace(s)] = true
	}
	o.ksArgs = strings.Fields(*ksArgs)
	o.ksSides = map[string]bool{}
	for _, s := range strings.Split(*ksSides, ",") {
		o.ksSides[strings.TrimSpace(s)] = true
	}
	if *ksLimits != "" {
		var q, b int
		if _, err := fmt.Sscanf(*ksLimits, "%d/%d", &q, &b); err != nil || q <= 0 || b <= 0 {
			fmt.Fprintf(os.Stderr, "-kube-scale-their-limits %q: want QPS/burst, e.g. 100/200\n", *ksLimits)
			os.Exit(2)
		}
		o.ksLimits = cpOptions{kcmQPS: q, kcmBurst: b, schedQPS: q, schedBurst: b}
	}
	o.kubeArgs = strings.Fields(*kubeArgs)
	for _, s := range strings.Split(*kubeBindN, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "-kube-binding-shards: %q is not a job size\n", s)
			os.Exit(2)
		}
		o.kubeBindN = append(o.kubeBindN, n)
	}
	o.kubeParts = map[string]bool{}
	for _, s := range strings.Split(*kubeParts, ",") {
		o.kubeParts[strings.TrimSpace(s)] = true
	}
	o.only = map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			known := false
			for _, k := range scenarios {
				known = known || k == s
			}
			if !known {
				fmt.Fprintf(os.Stderr, "unknown scenario %q (want %s)\n", s, strings.Join(scenarios, ", "))
				os.Exit(2)
			}
			o.only[s] = true
		}
	}
	if len(o.only) == 0 {
		for _, s := range scenarios {
			o.only[s] = true
		}
	}
	abs, err := filepath.Abs(o.binDir)
	if err == nil {
		o.binDir = abs
	}
	o.executorPath = filepath.Join(o.binDir, "executor")
	needBin := o.only["register"] || o.only["producer"] || o.only["latency"] || o.only["throughput"] || o.only["package"] || o.only["apply"] || o.only["ha"] ||
		o.only["workflow"] || o.only["cluster-sim"] || o.only["kube"] || o.only["kube-scale"] || o.only["java"] || o.only["teams"] || o.only["backfill"]
	if needBin {
		for _, b := range []string{"scheduler", "executor", "mesos-local"} {
			if _, err := os.Stat(filepath.Join(o.binDir, b)); err != nil {
				fmt.Fprintf(os.Stderr, "%s/%s not found: run make build first\n", o.binDir, b)
				os.Exit(2)
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &report{}
	r.machine()
	start := time.Now()
	type step struct {
		name string
		run  func(context.Context, options, *report) error
	}
	var steps []step
	switch {
	case o.only["producer"]:
		steps = append(steps, step{"register+producer", runRegisterProducer})
	case o.only["register"]:
		steps = append(steps, step{"register", runRegisterProducer})
	}
	if o.only["latency"] {
		steps = append(steps, step{"latency", runLatency})
	}
	if o.only["throughput"] {
		steps = append(steps, step{"throughput", runThroughput})
	}
	if o.only["package"] {
		steps = append(steps, step{"package", runPackage})
	}
	if o.only["apply"] {
		steps = append(steps, step{"apply", runApply})
	}
	if o.only["ha"] {
		steps = append(steps, step{"ha", runHA})
	}
	if o.only["workflow"] {
		steps = append(steps, step{"workflow", runWorkflow})
	}
	if o.only["gobench"] {
		steps = append(steps, step{"gobench", runGoBench})
	}
	if o.only["cluster-sim"] {
		steps = append(steps, step{"cluster-sim", runClusterSim})
	}
	if o.only["kube"] {
		steps = append(steps, step{"kube", runKube}) // the real single-node Kubernetes (kube.go)
	}
	if o.only["kube-scale"] {
		steps = append(steps, step{"kube-scale", runKubeScale}) // kwok nodes on the real control plane (kubescale.go)
	}
	if o.only["java"] {
		steps = append(steps, step{"java", runJava}) // Java jobs (java.go)
	}
	if o.only["teams"] {
		steps = append(steps, step{"teams", runTeams}) // namespaces' fires under others' bursts (teams_run.go)
	}
	if o.only["backfill"] {
		steps = append(steps, step{"backfill", runBackfill}) // a backfill beside live fires (backfill.go)
	}
	failed := false
	for _, s := range steps {
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		logf("=== %s (load average %s)", s.name, loadavg())
		if err := s.run(ctx, o, r); err != nil {
			failed = true
			logf("!!! %s: %v", s.name, err)
			r.note(fmt.Sprintf("%s could not complete: %v", s.name, firstLine(err.Error())))
		}
		logf("=== %s done in %s", s.name, time.Since(t).Round(time.Second))
	}
	r.print(os.Stdout, time.Since(start))
	if failed || ctx.Err() != nil {
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// report collects the figures and prints them as one table.
type report struct {
	header []string
	rows   []row
	notes  []string
	extra  []string // verbatim blocks (Go benchmark output)
}

type row struct{ scenario, figure, value, target, verdict string }

func (r *report) machine() {
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i >= 0 {
					model = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	r.header = append(r.header,
		fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s", runtime.NumCPU(), model, runtime.Version(), runtime.GOOS, runtime.GOARCH),
		"started: "+time.Now().UTC().Format(time.RFC3339)+", load average at start: "+loadavg())
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute figures: other work on a
// shared machine shows up in every latency figure.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// add records a figure; verdict is "met", "MISSED" or "" when there is no
// target (informational).
func (r *report) add(scenario, figure, value, target string, met *bool) {
	v := ""
	if met != nil {
		v = "met"
		if !*met {
			v = "MISSED"
		}
	}
	r.rows = append(r.rows, row{scenario, figure, value, target, v})
	logf("  %-12s %-52s %s  %s %s", scenario, figure, value, target, v)
}

func (r *report) note(s string) { r.notes = append(r.notes, s) }

func (r *report) print(w *os.File, took time.Duration) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ElasticJob-Cloud benchmark figures")
	for _, h := range r.header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintf(w, "harness run time: %s, load average at end: %s\n\n", took.Round(time.Second), loadavg())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| scenario\t| figure\t| measured\t| target\t| \t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|")
	for _, x := range r.rows {
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t|\n", x.scenario, x.figure, x.value, x.target, x.verdict)
	}
	tw.Flush()
	for _, e := range r.extra {
		fmt.Fprintln(w)
		fmt.Fprint(w, e)
	}
	if len(r.notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range r.notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}

func le(v, target float64) *bool { b := !math.IsNaN(v) && v <= target; return &b }
func ge(v, target float64) *bool { b := !math.IsNaN(v) && v >= target; return &b }

func ms(sec float64) string {
	if math.IsNaN(sec) {
		return "n/a"
	}
	if math.IsInf(sec, 1) {
		return "+Inf"
	}
	v := sec * 1000
	switch {
	case v < 0:
		return fmt.Sprintf("%.2f ms", v)
	case v < 0.001:
		return fmt.Sprintf("%.0f ns", v*1e6)
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 100:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

func mb(b float64) string { return fmt.Sprintf("%.1f MB", b/(1<<20)) }

// tempDir makes a data directory for one scheduler; removed at the end
// unless -keep.
func tempDir(o options, name string) (string, func(), error) {
	d, err := os.MkdirTemp("", "ejbench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	if p, err := filepath.EvalSymlinks(d); err == nil {
		d = p
	}
	return d, func() {
		killOwnExecutors(o.executorPath, d)
		if o.keep {
			logf("kept %s", d)
			return
		}
		_ = os.RemoveAll(d)
	}, nil
}
