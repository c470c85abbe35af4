package multicluster

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/internal/kwoksim"
)

// Options: the clusters-launch and clusters-move scenarios.
type Options struct {
	counts     string
	Counts     []Mix  // clusters-launch: the clusters of each run, one run each
	Agents     int    // clusters-launch: simulated agents in all, split between the clusters
	Kwok       string // clusters-launch: the kwok binary of the Kubernetes clusters ("": build kwoksim.Module)
	kubeLimits string
	KubeQPS    int // clusters-launch: the scheduler's kube_api_qps and kube_api_burst
	KubeBurst  int
	Jobs       int
	Period     int // clusters-launch: seconds between a job's fires (dividing 60)
	RegisterBy time.Duration
	Warmup     time.Duration
	Window     time.Duration
	Apart      Apart  // clusters-launch: what keeps the simulated clusters from the scheduler's CPU and disk
	Profile    bool   // clusters-launch: the scheduler's CPU profile over each window, kept in $TMPDIR
	Before     string // clusters-launch: a bin dir of the code before, its scheduler run alternately with -bin's

	MoveJobs  int           // clusters-move: jobs firing every second
	Phase     time.Duration // clusters-move: one phase (calm, moves, calm, drain, …)
	Cycles    int           // clusters-move: calm/moves/calm/drain cycles
	MoveEvery time.Duration // clusters-move: a move this often in a moves phase
}

// Apart is what keeps a clusters-launch run's simulated clusters, which production runs on
// other machines, from taking the scheduler's CPU and disk on this one.
type Apart struct {
	SchedCPUs float64 // the scheduler held to this many CPUs in every run (0: not held)
	SchedCore bool    // the scheduler on a CPU of its own, everything else on the others
	KubeDir   string  // where the Kubernetes clusters keep their files, etcd's data included ("": the run's directory)
}

// Flags registers the family's flags on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.counts, "mc-clusters", "1,2,4", "clusters-launch: the runs' clusters in this order, comma-separated, a run repeated to alternate: M mesos-local clusters, Kk Kubernetes clusters of kwok nodes, or M+Kk both (1: one Mesos cluster by mesos_url, 1k one Kubernetes by kube_config; more: clusters_file)")
	fs.IntVar(&o.Agents, "mc-agents", 400, "clusters-launch: simulated agents in all (8 cpus, 32 GB each), split evenly between the clusters (a Kubernetes cluster's share as kwok nodes of the same size)")
	fs.StringVar(&o.Kwok, "mc-kwok", "", "clusters-launch: a kwok binary for the Kubernetes clusters instead of building "+kwoksim.Module+" (≈ 30 min here)")
	fs.StringVar(&o.kubeLimits, "mc-kube-limits", "50/100", "clusters-launch: the scheduler's Kubernetes client QPS/burst (kube_api_qps, kube_api_burst) toward each Kubernetes cluster")
	fs.IntVar(&o.Jobs, "mc-jobs", 10_000, "clusters-launch: jobs to register (1-10 shards each)")
	fs.IntVar(&o.Period, "mc-period", 10, "clusters-launch: seconds between a job's fires, dividing 60 (10: ≈ 5,500 shard launches/s asked at 10,000 jobs, over what one scheduler sustains here)")
	fs.DurationVar(&o.RegisterBy, "mc-register-for", 120*time.Second, "clusters-launch: bound on registration")
	fs.DurationVar(&o.Warmup, "mc-warmup", 10*time.Second, "clusters-launch: pause between registration and the window")
	fs.Float64Var(&o.Apart.SchedCPUs, "mc-sched-cpus", 1, "clusters-launch: hold the scheduler to this many CPUs (a cgroup's CFS quota) in every run, so that what else a run starts on this machine (a Kubernetes cluster's control plane, which production runs elsewhere) takes its CPU from the idle cores, not the scheduler's; 0: not held")
	fs.BoolVar(&o.Apart.SchedCore, "mc-sched-core", false, "clusters-launch: give the scheduler the machine's last CPU to itself and run everything else the runs start (the simulated clusters, their control planes, ejbench) on the others (cgroup v1 cpusets), so that a simulated control plane, which production runs on other machines, takes no CPU time from it")
	fs.StringVar(&o.Apart.KubeDir, "mc-kube-dir", "", "clusters-launch: keep each Kubernetes cluster's files (its etcd's data included) in a new directory under this one, e.g. /dev/shm, so that its etcd's disk syncs, which production makes on other machines, do not queue with the scheduler's store's on this machine's disk (default: the run's directory)")
	fs.BoolVar(&o.Profile, "mc-profile", false, "clusters-launch: take the scheduler's CPU and blocking profiles over each window (debug_pprof on), keep them as $TMPDIR/ej-bench-clusters-launch-<clusters>-<n>.{cpu,block}.pprof and add the CPU profile's top to the report")
	fs.StringVar(&o.Before, "mc-before", "", "clusters-launch: a bin directory built from the code before (e.g. git archive <commit> | tar -x -C /tmp/before && make -C /tmp/before build, then /tmp/before/bin): each run of -mc-clusters is run with its scheduler and then with -bin's (the simulated clusters are -bin's in both), each compared with its own 1 and the two with each other")
	fs.DurationVar(&o.Window, "mc-window", 60*time.Second, "clusters-launch: measurement window per cluster count")
	fs.IntVar(&o.MoveJobs, "mc-move-jobs", 20, "clusters-move: cron jobs firing every second (one shard each)")
	fs.DurationVar(&o.Phase, "mc-phase", 20*time.Second, "clusters-move: length of each phase (calm, moves, calm, drain)")
	fs.IntVar(&o.Cycles, "mc-cycles", 2, "clusters-move: cycles of the four phases")
	fs.DurationVar(&o.MoveEvery, "mc-move-every", 3*time.Second, "clusters-move: the namespace moved to the other cluster this often in a moves phase")
}

// Parse reads -mc-clusters and checks the sizes.
func (o *Options) Parse() error {
	o.Counts = nil
	for _, f := range strings.Split(o.counts, ",") {
		m, err := parseMix(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-mc-clusters %q: %w", o.counts, err)
		}
		o.Counts = append(o.Counts, m)
	}
	if _, err := fmt.Sscanf(o.kubeLimits, "%d/%d", &o.KubeQPS, &o.KubeBurst); err != nil || o.KubeQPS <= 0 || o.KubeBurst <= 0 ||
		fmt.Sprintf("%d/%d", o.KubeQPS, o.KubeBurst) != o.kubeLimits {
		return fmt.Errorf("-mc-kube-limits %q: want QPS/burst, e.g. 50/100", o.kubeLimits)
	}
	switch {
	case o.Agents < 1 || o.Jobs < 1 || o.MoveJobs < 1 || o.Cycles < 1:
		return fmt.Errorf("-mc-agents, -mc-jobs, -mc-move-jobs and -mc-cycles must be positive")
	case o.Period < 1 || 60%o.Period != 0:
		return fmt.Errorf("-mc-period %d: a number of seconds dividing 60", o.Period)
	case o.Apart.SchedCPUs < 0:
		return fmt.Errorf("-mc-sched-cpus %g: a number of CPUs, or 0 for none", o.Apart.SchedCPUs)
	case o.Phase < 4*time.Second || o.MoveEvery < time.Second:
		return fmt.Errorf("-mc-phase must be at least 4s and -mc-move-every at least 1s")
	}
	for _, m := range o.Counts {
		if o.Agents%m.Total() != 0 {
			return fmt.Errorf("-mc-agents %d does not split evenly between %d clusters", o.Agents, m.Total())
		}
	}
	return nil
}

// Mix is one clusters-launch run's clusters: Mesos mesos-locals and Kube
// Kubernetes clusters of kwok nodes.
type Mix struct{ Mesos, Kube int }

// Total is the mix's number of clusters.
func (m Mix) Total() int { return m.Mesos + m.Kube }

// String is the mix as -mc-clusters writes it: 2, 1k, 1+1k.
func (m Mix) String() string {
	switch {
	case m.Kube == 0:
		return strconv.Itoa(m.Mesos)
	case m.Mesos == 0:
		return fmt.Sprintf("%dk", m.Kube)
	}
	return fmt.Sprintf("%d+%dk", m.Mesos, m.Kube)
}

// parseMix reads M, Kk or M+Kk. Each Kubernetes cluster is five
// processes (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok), so at most 4 of them.
func parseMix(s string) (Mix, error) {
	bad := fmt.Errorf("%q: want M (mesos-local clusters), Kk (Kubernetes clusters of kwok nodes) or M+Kk, 1 to 8 clusters in all, at most 4k", s)
	var m Mix
	mesos, kube, both := strings.Cut(s, "+")
	if !both && strings.HasSuffix(s, "k") {
		mesos, kube = "", s
	}
	if mesos != "" || both {
		n, err := strconv.Atoi(mesos)
		if err != nil || n < 1 {
			return Mix{}, bad
		}
		m.Mesos = n
	}
	if kube != "" || both {
		k, ok := strings.CutSuffix(kube, "k")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || n < 1 {
			return Mix{}, bad
		}
		m.Kube = n
	}
	if m.Total() < 1 || m.Total() > 8 || m.Kube > 4 {
		return Mix{}, bad
	}
	return m, nil
}

// options is what this family's scenarios read.
type options struct {
	bench.Env
	Options
}
