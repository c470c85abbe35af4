// Command ejbench measures the scheduler end to end: it starts real
// bin/scheduler processes (own temporary data directories, free loopback
// ports), drives them through the REST API and reads their /metrics and
// /proc, then prints the figures next to their targets. It also runs the
// packages' Go benchmarks. Figures are measurements, never pass/fail
// assertions: the exit status reflects only whether the harness could run.
//
//	go run ./cmd/ejbench                 # every scenario (scripts/bench.sh)
//	go run ./cmd/ejbench -only producer  # one or more of: register, producer,
//	                                     # latency, throughput, package, apply, ha, workflow,
//	                                     # gobench, cluster-sim (-sim-store embedded|zk|both), kube,
//	                                     # kube-scale (-kube-scale-*: 1,000 kwok nodes), java,
//	                                     # teams (-teams-*: namespaces' fires under others' bursts), backfill,
//	                                     # taskcost (-taskcost-*: scheduler CPU per task by stage)
//
// Layout: main.go only parses the flags and runs the chosen scenarios in
// order, printing the report; options.go gathers the flags: the settings
// every scenario reads (bench.Env: -bin, -keep, -workers; -log-level is
// bench.LogLevel) and each family's options, which register their own
// flags. Each scenario family is a package under internal/ with one Run
// (producer: register and producer; latency; throughput; upload: package;
// apply; ha; workflow; gobench; clustersim; kube; kubescale; java; teams;
// backfill; taskcost); what they share (the report, processes, the REST client,
// /proc) is internal/bench, and masterload (the master-ceiling framework)
// and promtext (reading /metrics) stand alone.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/apply"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/backfill"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/clustersim"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/gobench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/ha"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/java"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kube"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kubescale"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/latency"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/multicluster"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/producer"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/taskcost"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/teams"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/throughput"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/upload"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/workflow"
)

var scenarios = []string{"register", "producer", "latency", "throughput", "package", "apply", "ha", "workflow", "gobench", "cluster-sim", "kube", "kube-scale", "java", "teams", "backfill", "taskcost", "clusters-launch", "clusters-move"}

func main() {
	o, err := parseOptions(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if needsBinaries(o.only) {
		for _, b := range []string{"scheduler", "executor", "mesos-local"} {
			if _, err := os.Stat(filepath.Join(o.env.BinDir, b)); err != nil {
				fmt.Fprintf(os.Stderr, "%s/%s not found: run make build first\n", o.env.BinDir, b)
				os.Exit(2)
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &bench.Report{}
	r.Machine()
	start := time.Now()
	steps := chosenSteps(o.only)
	failed := false
	for _, s := range steps {
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		bench.Logf("=== %s (load average %s)", s.name, bench.Loadavg())
		if err := s.run(ctx, o, r); err != nil {
			failed = true
			bench.Logf("!!! %s: %v", s.name, err)
			r.Note(fmt.Sprintf("%s could not complete: %v", s.name, bench.FirstLine(err.Error())))
		}
		bench.Logf("=== %s done in %s", s.name, time.Since(t).Round(time.Second))
	}
	r.Print(os.Stdout, time.Since(start))
	if failed || ctx.Err() != nil {
		os.Exit(1)
	}
}

// step is one scenario the harness runs.
type step struct {
	name string
	run  func(context.Context, options, *bench.Report) error
}

// chosenSteps is the scenarios -only chose, in the order they run. Each family's
// Run reads the shared settings and its own options.
func chosenSteps(only map[string]bool) []step {
	var steps []step
	switch {
	case only["producer"]:
		steps = append(steps, step{"register+producer", func(ctx context.Context, o options, r *bench.Report) error {
			return producer.Run(ctx, o.env, o.producer, true, r)
		}})
	case only["register"]:
		steps = append(steps, step{"register", func(ctx context.Context, o options, r *bench.Report) error {
			return producer.Run(ctx, o.env, o.producer, false, r)
		}})
	}
	for _, s := range []step{
		{"latency", func(ctx context.Context, o options, r *bench.Report) error {
			return latency.Run(ctx, o.env, o.latency, r)
		}},
		{"throughput", func(ctx context.Context, o options, r *bench.Report) error {
			return throughput.Run(ctx, o.env, o.throughput, r)
		}},
		{"package", func(ctx context.Context, o options, r *bench.Report) error {
			return upload.Run(ctx, o.env, o.upload, r)
		}},
		{"apply", func(ctx context.Context, o options, r *bench.Report) error { return apply.Run(ctx, o.env, r) }},
		{"ha", func(ctx context.Context, o options, r *bench.Report) error { return ha.Run(ctx, o.env, o.ha, r) }},
		{"workflow", func(ctx context.Context, o options, r *bench.Report) error {
			return workflow.Run(ctx, o.env, o.workflow, r)
		}},
		{"gobench", func(ctx context.Context, o options, r *bench.Report) error {
			return gobench.Run(ctx, o.env, o.gobench, r)
		}},
		{"cluster-sim", func(ctx context.Context, o options, r *bench.Report) error {
			return clustersim.Run(ctx, o.env, o.clustersim, r)
		}},
		// the real single-node Kubernetes
		{"kube", func(ctx context.Context, o options, r *bench.Report) error { return kube.Run(ctx, o.env, o.kube, r) }},
		// kwok nodes on the real control plane
		{"kube-scale", func(ctx context.Context, o options, r *bench.Report) error {
			return kubescale.Run(ctx, o.env, o.kubescale, r)
		}},
		// Java jobs, as many triggers as the latency series (at most 40), as far apart
		{"java", func(ctx context.Context, o options, r *bench.Report) error {
			return java.Run(ctx, o.env, o.java, o.latency.Triggers(), o.latency.Gap(), r)
		}},
		// namespaces' fires under others' bursts
		{"teams", func(ctx context.Context, o options, r *bench.Report) error { return teams.Run(ctx, o.env, o.teams, r) }},
		// a backfill beside live fires
		{"backfill", func(ctx context.Context, o options, r *bench.Report) error { return backfill.Run(ctx, o.env, r) }},
		// one task's scheduler CPU by stage (-taskcost-before: the code before alternately)
		{"taskcost", func(ctx context.Context, o options, r *bench.Report) error {
			return taskcost.Run(ctx, o.env, o.taskcost, r)
		}},
		// one scheduler on several clusters
		{"clusters-launch", func(ctx context.Context, o options, r *bench.Report) error {
			return multicluster.RunLaunch(ctx, o.env, o.multicluster, r)
		}},
		{"clusters-move", func(ctx context.Context, o options, r *bench.Report) error {
			return multicluster.RunMove(ctx, o.env, o.multicluster, r)
		}},
	} {
		if only[s.name] {
			steps = append(steps, s)
		}
	}
	return steps
}

// needsBinaries: every scenario but gobench starts bin/'s programs.
func needsBinaries(only map[string]bool) bool {
	for s := range only {
		if s != "gobench" {
			return true
		}
	}
	return false
}
