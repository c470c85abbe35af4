package kube

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Options: the kube scenario on the real single-node Kubernetes.
type Options struct {
	kubeParts   map[string]bool // kube: which parts run
	kubeRounds  int             // kube: executions of the job the CPU per pod is measured over
	kubeShards  int             // kube: its shards
	kubeProfile bool
	kubeArgs    []string
	kubeBindN   []int // kube binding: the job sizes

	kubePartsFlag, kubeBindFlag, kubeArgsFlag string
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.kubePartsFlag, "kube-parts", "floor,job,ours,cpu,rate,cron,binding", "kube: the parts to run (floor: pods by hand, job: an Indexed Job, ours: our trigger, cpu: the scheduler's CPU per pod, rate: pods per second, cron: a cron fire against a CronJob, binding: 3 and 20 shards in both binding modes against Indexed Jobs; timeline, not by default: where 20 pods' time to Running goes, pod by pod, logged)")
	fs.IntVar(&p.kubeRounds, "kube-cpu-rounds", 5, "kube: executions of a job the scheduler's CPU per pod is measured over")
	fs.IntVar(&p.kubeShards, "kube-cpu-shards", 3, "kube: the shards of that job")
	fs.StringVar(&p.kubeBindFlag, "kube-binding-shards", "3,20", "kube: the binding part's job sizes, comma-separated")
	fs.StringVar(&p.kubeArgsFlag, "kube-scheduler-args", "", "kube: more flags for the scheduler, space-separated (e.g. \"--registry-sync normal\" to see what the fsyncs cost)")
	fs.BoolVar(&p.kubeProfile, "kube-profile", false, "kube: CPU-profile the scheduler over the CPU-per-pod rounds and print the top of it (go tool pprof)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error {
	p.kubeArgs = strings.Fields(p.kubeArgsFlag)
	for _, s := range strings.Split(p.kubeBindFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-kube-binding-shards: %q is not a job size", s)
		}
		p.kubeBindN = append(p.kubeBindN, n)
	}
	p.kubeParts = bench.Set(p.kubePartsFlag)
	return nil
}
