package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

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

// options is the harness's configuration: the settings every scenario
// reads (bench.Env) and each scenario family's own options, which register
// their own flags.
type options struct {
	only map[string]bool
	env  bench.Env

	producer     producer.Options // register, producer
	latency      latency.Options
	throughput   throughput.Options
	upload       upload.Options // package
	ha           ha.Options
	workflow     workflow.Options
	gobench      gobench.Options
	java         java.Options
	clustersim   clustersim.Options
	kube         kube.Options
	kubescale    kubescale.Options
	teams        teams.Options
	taskcost     taskcost.Options
	multicluster multicluster.Options // clusters-launch, clusters-move
}

// part is one scenario family's options: flags registers its flags on fs,
// parse turns what needs it (lists, sizes) into values once fs is parsed.
type part interface {
	Flags(fs *flag.FlagSet)
	Parse() error
}

// parts is every family's options.
func (o *options) parts() []part {
	return []part{&o.producer, &o.latency, &o.throughput, &o.upload, &o.ha, &o.workflow,
		&o.gobench, &o.java, &o.clustersim, &o.kube, &o.kubescale, &o.teams, &o.taskcost, &o.multicluster}
}

// parseOptions registers every flag on fs, parses args and checks them.
func parseOptions(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	only := fs.String("only", "", "comma-separated scenarios to run: "+strings.Join(scenarios, ", ")+" (default: all; producer includes register)")
	fs.StringVar(&o.env.BinDir, "bin", "bin", "directory holding the scheduler and executor binaries (make build)")
	fs.BoolVar(&o.env.Keep, "keep", false, "keep the temporary data directories (and scheduler logs)")
	fs.IntVar(&o.env.Workers, "workers", 24, "concurrent registration clients (keep-alive)")
	fs.StringVar(&bench.LogLevel, "log-level", "warn", "--log-level of the schedulers and mesos-local processes the harness starts (their logs are kept with -keep)")
	for _, p := range o.parts() {
		p.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, p := range o.parts() {
		if err := p.Parse(); err != nil {
			return o, err
		}
	}
	var err error
	if o.only, err = parseOnly(*only); err != nil {
		return o, err
	}
	if abs, err := filepath.Abs(o.env.BinDir); err == nil {
		o.env.BinDir = abs
	}
	o.env.ExecutorPath = filepath.Join(o.env.BinDir, "executor")
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
