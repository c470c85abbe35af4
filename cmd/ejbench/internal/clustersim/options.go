package clustersim

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// Options: the cluster-sim scenario (a simulated mesos-local of many agents).
type Options struct {
	simStore       string // cluster-sim: embedded, zk or both
	simZK          string
	simZKEnsemble  string
	simStandby     bool
	simTakeover    bool
	simTakeovers   int
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
	simMasterLoad  time.Duration
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.simStore, "sim-store", "both", "cluster-sim registries, comma-separated: embedded, zk, zk-ensemble; both = embedded,zk; all = the three (zk needs -sim-zk, zk-ensemble -sim-zk-ensemble)")
	fs.StringVar(&p.simZK, "sim-zk", os.Getenv("EJ_TEST_ZK"), "cluster-sim: ZooKeeper servers host:port for the zk variant (default $EJ_TEST_ZK)")
	fs.StringVar(&p.simZKEnsemble, "sim-zk-ensemble", os.Getenv("EJ_TEST_ZK_ENSEMBLE"), "cluster-sim: the 3-server ensemble host:port,… for the zk-ensemble variant (default $EJ_TEST_ZK_ENSEMBLE; scripts/services.sh start-ensemble DIR)")
	fs.BoolVar(&p.simStandby, "sim-standby", true, "cluster-sim: the ZooKeeper variants run a standby scheduler beside the leader (its registry copy's lag is reported)")
	fs.BoolVar(&p.simTakeover, "sim-takeover", true, "cluster-sim: after a ZooKeeper variant's window, kill -9 the leader and time the standby's first launch")
	fs.IntVar(&p.simTakeovers, "sim-takeovers", 1, "cluster-sim: with -sim-takeover, the takeovers timed one after another (the killed scheduler restarted as a standby, then "+takeoverSettle.String()+" of settling before the next kill): one run gives a distribution")
	fs.IntVar(&p.simAgents, "sim-agents", 1000, "cluster-sim: simulated agents (mesos-local --sim-agents)")
	fs.Float64Var(&p.simAgentCPUs, "sim-agent-cpus", 8, "cluster-sim: CPUs per simulated agent")
	fs.Float64Var(&p.simAgentMemMB, "sim-agent-mem-mb", 32768, "cluster-sim: memory per simulated agent in MB")
	fs.StringVar(&p.simDuration, "sim-task-duration", "2s-5s", "cluster-sim: simulated task run time, d or min-max")
	fs.Float64Var(&p.simFailRatio, "sim-fail-ratio", 0, "cluster-sim: share of simulated tasks that fail")
	fs.IntVar(&p.simJobs, "sim-jobs", 100_000, "cluster-sim: jobs to register (1-10 shards each, crons spread over the minute)")
	fs.IntVar(&p.simApps, "sim-apps", 10, "cluster-sim: apps the jobs are spread over (one executor per app and agent)")
	fs.DurationVar(&p.simRegisterFor, "sim-register-for", 100*time.Second, "cluster-sim: bound on registration (the run goes on with the jobs registered by then)")
	fs.DurationVar(&p.simWarmup, "sim-warmup", 10*time.Second, "cluster-sim: pause between registration and the window")
	fs.DurationVar(&p.simWindow, "sim-window", 3*time.Minute, "cluster-sim: measurement window")
	fs.BoolVar(&p.simProfile, "sim-profile", false, "cluster-sim: CPU-profile mesos-local and the scheduler, take the scheduler's heap profile at the window's end, and print the top of each (go tool pprof)")
	fs.DurationVar(&p.simMasterLoad, "sim-master-load", 20*time.Second, "cluster-sim: drive a simulated mesos-local with a minimal framework this long first, for the master's own ceiling (0: skip)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error {
	if p.simTakeovers < 1 {
		return fmt.Errorf("-sim-takeovers %d: want at least 1", p.simTakeovers)
	}
	return nil
}
