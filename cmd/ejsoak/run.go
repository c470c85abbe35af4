package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/internal/kwoksim"
	"github.com/ejcloud/elasticjob/internal/soak"
)

// errAnomalies: the checker found anomalies (exit status 1).
var errAnomalies = errors.New("anomalies found")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ejsoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c soak.Config
	var root, keep, recheck, expectJob string
	fs.StringVar(&c.Shape, "shape", "zk", "cluster shape: zk (3-server ZooKeeper ensemble, 3 schedulers, mesos-local's simulated agents), etcd (3 schedulers with an etcd member each, the same agents), embedded (one scheduler, its embedded store on a tmpfs when root), real-mesos (the etcd shape's schedulers on a real Mesos 1.11 master and agents running real executors; run it under flock /tmp/mesos.lock), kube (a real single-node Kubernetes of -k8s-home, 3 schedulers with the Kubernetes engine on the etcd store, tasks as pods; root, under flock /tmp/kube.lock), clusters (one scheduler on two clusters: its embedded engine running real processes and mesos-local's simulated agents; the remote cluster lost and cut off, either drained, the namespace and jobs moved between them) or clusters-real (the clusters shape with a real Mesos 1.11 of -mesos-home, the real Kubernetes of -k8s-home and a second control plane of that build whose nodes kwok plays: five clusters, their API servers stopped and cut off too, a kwok node lost with its runs, the real node crashed with its containers; root, under flock /tmp/kube.lock and /tmp/mesos.lock)")
	fs.DurationVar(&c.Duration, "duration", 5*time.Minute, "how long faults are injected")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the workload and the nemesis (0: random, printed)")
	fs.IntVar(&c.Jobs, "jobs", 200, "cron jobs registered")
	fs.DurationVar(&c.Session, "session", 3*time.Second, "the schedulers' ZooKeeper session timeout")
	fs.DurationVar(&c.Warmup, "warmup", 20*time.Second, "workload without faults before the first")
	fs.DurationVar(&c.Tail, "tail", 30*time.Second, "workload after the last fault healed")
	fs.DurationVar(&c.MinGap, "min-gap", 5*time.Second, "least time between faults")
	fs.DurationVar(&c.MaxGap, "max-gap", 20*time.Second, "most time between faults")
	fs.DurationVar(&c.Trigger, "trigger-every", time.Second, "one manual trigger with an idempotency key this often (0: none)")
	fs.DurationVar(&c.Change, "change-every", 3*time.Second, "one configuration change this often (0: none)")
	fs.DurationVar(&c.Heal, "heal", 5*time.Second, "every job must start within this long of its first fire after the last fault healed")
	fs.StringVar(&root, "root", ".", "the module's root (binaries are built from it unless -bin)")
	fs.StringVar(&c.Bin, "bin", "", "directory with scheduler and mesos-local (default: build them)")
	fs.StringVar(&keep, "dir", "", "working directory, kept (default: a temporary one, removed)")
	fs.StringVar(&c.Services, "services", "", "scripts/services.sh (default: ROOT/scripts/services.sh)")
	var periods, faults string
	fs.StringVar(&faults, "faults", "", "the fault kinds drawn, comma-separated (default: all the shape's)")
	fs.StringVar(&periods, "periods", "", "the jobs' cron periods in seconds, comma-separated, each dividing 60 (default 2,3,4,5,6,10; real-mesos: 5,6,10,12,15)")
	fs.StringVar(&c.MesosHome, "mesos-home", "", "real-mesos: the Mesos build with bin/mesos-master, bin/mesos-agent and libexec/mesos (default: $EJ_MESOS_HOME, else ROOT/../shared/mesos-1.11); clusters: a third cluster on a real master and agent of that build (default: none; run it under flock /tmp/mesos.lock)")
	fs.IntVar(&c.Agents, "agents", 2, "real-mesos: how many real agents")
	fs.StringVar(&c.K8sHome, "k8s-home", os.Getenv("EJ_K8S_HOME"), "the kube and clusters-real shapes' Kubernetes build (scripts/start.sh, stop.sh, bin.sh, certs.sh; default: $EJ_K8S_HOME, else ROOT/../shared/k8s-1.37)")
	fs.StringVar(&c.KwokBin, "kwok", "", "clusters-real: the kwok binary (default: built from the Go module proxy, "+kwoksim.Module+", into the run's directory)")
	fs.StringVar(&recheck, "recheck", "", "run the checker again over a run kept with -dir, and start nothing")
	fs.StringVar(&expectJob, "expect", "", "with -recheck: also print the expectations the named job's history is judged against (each fire's fates and bounds)")
	var raftLog, raftKey string
	fs.StringVar(&raftLog, "raft-log", "", "print the writes an etcd member's raft log holds to keys containing -key (a run kept with -dir, a member's data or WAL directory), and start nothing")
	fs.StringVar(&raftKey, "key", "", "with -raft-log: the part of the keys to print (e.g. ready/sk153)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if raftLog != "" {
		if raftKey == "" {
			return fmt.Errorf("-raft-log needs -key (the part of the keys to print, e.g. ready/sk153)")
		}
		return soak.PrintRaftWrites(stdout, raftLog, raftKey)
	}
	if expectJob != "" && recheck == "" {
		return fmt.Errorf("-expect needs -recheck (a run kept with -dir)")
	}
	if recheck != "" {
		saved, in, err := soak.Load(recheck)
		if err != nil {
			return err
		}
		rep := soak.Check(in)
		rep.Print(stdout, saved.Seed, saved.Faults)
		if expectJob != "" {
			if err := soak.PrintExpectations(stdout, in, expectJob); err != nil {
				return err
			}
		}
		if len(rep.Anomalies) > 0 {
			return errAnomalies
		}
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.Shape == soak.ShapeRealMesos {
		realMesosDefaults(&c, set, &periods)
	}
	if c.Shape == soak.ShapeClustersReal {
		clustersRealDefaults(&c, set)
	}
	var err error
	if c.Periods, err = parsePeriods(periods); err != nil {
		return err
	}
	for _, f := range strings.Split(faults, ",") {
		if f = strings.TrimSpace(f); f != "" {
			c.Faults = append(c.Faults, f)
		}
	}
	switch {
	case c.Shape != "zk" && c.Shape != "etcd" && c.Shape != "embedded" && c.Shape != soak.ShapeRealMesos && c.Shape != "kube" && c.Shape != soak.ShapeClusters && c.Shape != soak.ShapeClustersReal:
		return fmt.Errorf("-shape %q: want zk, etcd, embedded, %s, kube, %s or %s", c.Shape, soak.ShapeRealMesos, soak.ShapeClusters, soak.ShapeClustersReal)
	case c.Duration <= 0 || c.Jobs <= 0:
		return fmt.Errorf("-duration and -jobs must be positive")
	case c.MinGap <= 0 || c.MaxGap < c.MinGap:
		return fmt.Errorf("-min-gap must be positive and at most -max-gap")
	case c.Session <= 0:
		return fmt.Errorf("-session must be positive")
	case c.Agents <= 0 || c.Agents > 8:
		return fmt.Errorf("-agents must be from 1 to 8")
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64() >> 16
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if (c.Shape == soak.ShapeRealMesos || c.Shape == soak.ShapeClustersReal) && c.MesosHome == "" {
		c.MesosHome = cmp.Or(os.Getenv("EJ_MESOS_HOME"), filepath.Join(absRoot, "..", "shared", "mesos-1.11"))
	}
	if c.Shape == "kube" || c.Shape == soak.ShapeClustersReal {
		if c.Shape == "kube" {
			kubeDefaults(set, &c)
		}
		if c.K8sHome == "" {
			c.K8sHome = filepath.Join(absRoot, "..", "shared", "k8s-1.37")
		}
	}
	if c.Services == "" {
		c.Services = filepath.Join(absRoot, "scripts", "services.sh")
	}
	if keep == "" {
		d, err := os.MkdirTemp("", "ejsoak-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		keep = d
	}
	if c.Dir, err = filepath.Abs(keep); err != nil {
		return err
	}
	c.Log = slog.New(slog.NewTextHandler(stderr, nil))
	if c.Bin == "" {
		c.Bin = filepath.Join(c.Dir, "bin")
		if err := soak.Build(ctx, absRoot, c.Bin); err != nil {
			return err
		}
	}
	if c.Shape == soak.ShapeClustersReal && c.KwokBin == "" {
		if c.KwokBin, err = kwoksim.Build(ctx, filepath.Join(c.Dir, "kwok-bin")); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "ejsoak: shape %s, seed %d, %s of faults, %d jobs, in %s\n", c.Shape, c.Seed, c.Duration, c.Jobs, c.Dir)
	res, err := soak.Run(ctx, c)
	if err != nil {
		return err
	}
	res.Report.Print(stdout, c.Seed, res.Faults)
	if len(res.Report.Anomalies) > 0 {
		return errAnomalies
	}
	return nil
}

// realMesosDefaults scales the workload to real processes on a real agent
// (each shard a process, a few per second on two shared cores) where the
// flags were not given.
func realMesosDefaults(c *soak.Config, set map[string]bool, periods *string) {
	if !set["jobs"] {
		c.Jobs = 30
	}
	if !set["periods"] {
		*periods = "5,6,10,12,15"
	}
	if !set["trigger-every"] {
		c.Trigger = 3 * time.Second
	}
	if !set["change-every"] {
		c.Change = 5 * time.Second
	}
}

// clustersRealDefaults scales the workload to the clusters-real shape
// where the flags were not given: 30 jobs (their sizes and periods a real
// kubelet's), a trigger and a change every 5 s (a move in a quarter of
// the changes), and 30 s for every job to start again after the last
// heal (a pod's start on a loaded node, as in the kube shape).
func clustersRealDefaults(c *soak.Config, set map[string]bool) {
	workloadDefaults(c, set, 30, 5*time.Second, 5*time.Second, 30*time.Second)
}

// workloadDefaults sets the workload's size and pace to a shape's own
// where the flags (set) were not given.
func workloadDefaults(c *soak.Config, set map[string]bool, jobs int, trigger, change, heal time.Duration) {
	if !set["jobs"] {
		c.Jobs = jobs
	}
	if !set["trigger-every"] {
		c.Trigger = trigger
	}
	if !set["change-every"] {
		c.Change = change
	}
	if !set["heal"] {
		c.Heal = heal
	}
}

// parsePeriods reads -periods: seconds dividing 60 (so */P fires every P
// seconds), comma-separated; "" is nil (the workload's default).
func parsePeriods(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p <= 0 || p > 60 || 60%p != 0 {
			return nil, fmt.Errorf("-periods %q: each must be a number of seconds dividing 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60), got %q", s, f)
		}
		out = append(out, p)
	}
	return out, nil
}

// kubeDefaults sizes the kube shape's workload for one real kubelet on a
// small machine, where its flags were left at the simulated agents'
// defaults: 15 jobs, a trigger every 10 s, a change every 10 s, and 30 s
// for every job to start again after the last heal (a pod took 10 s
// from its creation to its container's start at p50, 30 s at most, on a
// kubelet sharing 2 cores at load 30).
func kubeDefaults(set map[string]bool, c *soak.Config) {
	workloadDefaults(c, set, 15, 10*time.Second, 10*time.Second, 30*time.Second)
}
