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
//	                                     # teams (-teams-*: namespaces' fires under others' bursts), backfill
//
// Layout: main.go runs the chosen scenarios and prints the report;
// options.go holds the shared options and one options struct per scenario
// family, each registering its own flags (the larger families' in
// clustersim_options.go, kube_options.go, java_options.go,
// teams_options.go). Each family's files carry its name (clustersim*,
// kube*, kwok, k8sproc, teams*, java*, ha, hacluster, ...); what they all
// share (processes, the REST client, /proc) stays in this package, and the
// parts that stand alone are packages under internal/: masterload (the
// master-ceiling framework) and promtext (reading /metrics).
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
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

var scenarios = []string{"register", "producer", "latency", "throughput", "package", "apply", "ha", "workflow", "gobench", "cluster-sim", "kube", "kube-scale", "java", "teams", "backfill"}

func main() {
	o, err := parseOptions(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if needsBinaries(o.only) {
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
	steps := plan(o.only)
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

// step is one scenario the harness runs.
type step struct {
	name string
	run  func(context.Context, options, *report) error
}

// plan is the scenarios -only chose, in the order they run.
func plan(only map[string]bool) []step {
	var steps []step
	switch {
	case only["producer"]:
		steps = append(steps, step{"register+producer", runRegisterProducer})
	case only["register"]:
		steps = append(steps, step{"register", runRegisterProducer})
	}
	for _, s := range []step{
		{"latency", runLatency},
		{"throughput", runThroughput},
		{"package", runPackage},
		{"apply", runApply},
		{"ha", runHA},
		{"workflow", runWorkflow},
		{"gobench", runGoBench},
		{"cluster-sim", runClusterSim},
		{"kube", runKube},            // the real single-node Kubernetes (kube.go)
		{"kube-scale", runKubeScale}, // kwok nodes on the real control plane (kubescale.go)
		{"java", runJava},            // Java jobs (java.go)
		{"teams", runTeams},          // namespaces' fires under others' bursts (teams_run.go)
		{"backfill", runBackfill},    // a backfill beside live fires (backfill.go)
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
func tempDir(o env, name string) (string, func(), error) {
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
