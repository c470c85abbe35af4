package kubescale

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kwokcluster"
	"github.com/ejcloud/elasticjob/internal/kwoksim"
)

// Options: the kube-scale scenario (kwok nodes on the real control plane).
type Options struct {
	ksNodes, ksNodeCPUs, ksNodeMemGiB int // kube-scale: kwok nodes and their size
	ksJobs, ksPeriod                  int // kube-scale: jobs, and the seconds between a job's fires
	ksWarmup, ksWindow, ksGrace       time.Duration
	ksTimeout                         time.Duration
	ksSides                           map[string]bool
	ksKwok                            string
	ksLimits                          kwokcluster.Limits
	ksProfile                         bool
	ksArgs                            []string

	ksSidesFlag, ksLimitsFlag, ksArgsFlag string
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.ksNodes, "kube-scale-nodes", 1000, "kube-scale: kwok nodes")
	fs.IntVar(&p.ksNodeCPUs, "kube-scale-node-cpus", 32, "kube-scale: CPUs of each kwok node")
	fs.IntVar(&p.ksNodeMemGiB, "kube-scale-node-mem-gib", 128, "kube-scale: memory of each kwok node in GiB")
	fs.IntVar(&p.ksJobs, "kube-scale-jobs", 10_000, "kube-scale: jobs (1-10 shards each)")
	fs.IntVar(&p.ksPeriod, "kube-scale-period", 3600, "kube-scale: seconds between a job's fires (divides a minute, or whole minutes dividing an hour); the jobs' offsets spread over it")
	fs.DurationVar(&p.ksWarmup, "kube-scale-warmup", 20*time.Second, "kube-scale: load before each side's window")
	fs.DurationVar(&p.ksWindow, "kube-scale-window", time.Minute, "kube-scale: each side's measurement window")
	fs.DurationVar(&p.ksGrace, "kube-scale-grace", 20*time.Second, "kube-scale: wait after the window for the pods of its fires")
	fs.DurationVar(&p.ksTimeout, "kube-scale-timeout", 20*time.Minute, "kube-scale: bound on the whole scenario")
	fs.StringVar(&p.ksSidesFlag, "kube-scale-sides", "ours,jobs", "kube-scale: the sides to run (ours, jobs)")
	fs.StringVar(&p.ksKwok, "kube-scale-kwok", "", "kube-scale: a kwok binary to use instead of building "+kwoksim.Module)
	fs.StringVar(&p.ksLimitsFlag, "kube-scale-their-limits", "", "kube-scale: client QPS/burst of kube-controller-manager and kube-scheduler, e.g. 100/200 (default: theirs, 20/30 and 50/100)")
	fs.BoolVar(&p.ksProfile, "kube-scale-profile", false, "kube-scale: CPU-profile our scheduler over its window and print the top of it")
	fs.StringVar(&p.ksArgsFlag, "kube-scale-scheduler-args", "", "kube-scale: more flags for our scheduler, space-separated")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error {
	p.ksArgs = strings.Fields(p.ksArgsFlag)
	p.ksSides = bench.Set(p.ksSidesFlag)
	if p.ksLimitsFlag != "" {
		var q, b int
		if _, err := fmt.Sscanf(p.ksLimitsFlag, "%d/%d", &q, &b); err != nil || q <= 0 || b <= 0 {
			return fmt.Errorf("-kube-scale-their-limits %q: want QPS/burst, e.g. 100/200", p.ksLimitsFlag)
		}
		p.ksLimits = kwokcluster.Limits{KCMQPS: q, KCMBurst: b, SchedQPS: q, SchedBurst: b}
	}
	return nil
}
