package multicluster

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Options: the clusters-launch and clusters-move scenarios.
type Options struct {
	counts     string
	Counts     []int // clusters-launch: how many clusters, one run each
	Agents     int   // clusters-launch: simulated agents in all, split between the clusters
	Jobs       int
	Period     int // clusters-launch: seconds between a job's fires (dividing 60)
	RegisterBy time.Duration
	Warmup     time.Duration
	Window     time.Duration

	MoveJobs  int           // clusters-move: jobs firing every second
	Phase     time.Duration // clusters-move: one phase (calm, moves, calm, drain, …)
	Cycles    int           // clusters-move: calm/moves/calm/drain cycles
	MoveEvery time.Duration // clusters-move: a move this often in a moves phase
}

// Flags registers the family's flags on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.counts, "mc-clusters", "1,2,4", "clusters-launch: cluster counts to run in this order, comma-separated, a count repeated to alternate (1: one Mesos cluster by mesos_url; more: clusters_file)")
	fs.IntVar(&o.Agents, "mc-agents", 400, "clusters-launch: simulated agents in all (8 cpus, 32 GB each), split evenly between the clusters")
	fs.IntVar(&o.Jobs, "mc-jobs", 10_000, "clusters-launch: jobs to register (1-10 shards each)")
	fs.IntVar(&o.Period, "mc-period", 10, "clusters-launch: seconds between a job's fires, dividing 60 (10: ≈ 5,500 shard launches/s asked at 10,000 jobs, over what one scheduler sustains here)")
	fs.DurationVar(&o.RegisterBy, "mc-register-for", 120*time.Second, "clusters-launch: bound on registration")
	fs.DurationVar(&o.Warmup, "mc-warmup", 10*time.Second, "clusters-launch: pause between registration and the window")
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
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 8 {
			return fmt.Errorf("-mc-clusters %q: each a number of clusters from 1 to 8", o.counts)
		}
		o.Counts = append(o.Counts, n)
	}
	switch {
	case o.Agents < 1 || o.Jobs < 1 || o.MoveJobs < 1 || o.Cycles < 1:
		return fmt.Errorf("-mc-agents, -mc-jobs, -mc-move-jobs and -mc-cycles must be positive")
	case o.Period < 1 || 60%o.Period != 0:
		return fmt.Errorf("-mc-period %d: a number of seconds dividing 60", o.Period)
	case o.Phase < 4*time.Second || o.MoveEvery < time.Second:
		return fmt.Errorf("-mc-phase must be at least 4s and -mc-move-every at least 1s")
	}
	for _, n := range o.Counts {
		if o.Agents%n != 0 {
			return fmt.Errorf("-mc-agents %d does not split evenly between %d clusters", o.Agents, n)
		}
	}
	return nil
}

// options is what this family's scenarios read.
type options struct {
	bench.Env
	Options
}
