package gobench

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Run runs the packages' Go benchmarks (one CPU, short benchtime)
// and reports their figures.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	pkgs := []struct{ pkg, benchtime string }{
		{"./offers/", "2s"},
		{"./jobs/cron/", "300ms"},
		{"./store/sqlite/", "1s"},
	}
	var firstErr error
	var block strings.Builder
	block.WriteString("Go benchmarks (go test -run x -bench . -benchmem -cpu 1):\n")
	for _, p := range pkgs {
		bt := p.benchtime
		if o.benchtime != "" {
			bt = o.benchtime
		}
		args := []string{"test", "-run", "x", "-bench", ".", "-benchmem", "-cpu", "1", "-count", "1", "-benchtime", bt, p.pkg}
		bench.Logf("go %s", strings.Join(args, " "))
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		fmt.Fprintf(&block, "\n$ go %s\n", strings.Join(args, " "))
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "---") {
				block.WriteString(l + "\n")
			}
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("go test %s: %v\n%s", p.pkg, err, out)
			}
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			name, nsop, extra, ok := parseBenchLine(l)
			if !ok {
				continue
			}
			target, verdict := "", (*bool)(nil)
			if name == "BenchmarkMatch10kShards1kOffers" {
				target, verdict = "≤ 50 ms", bench.Le(nsop/1e9, .05)
			}
			r.Add("go bench", strings.TrimPrefix(p.pkg, "./")+" "+name, bench.Ms(nsop/1e9)+"/op"+extra, target, verdict)
		}
	}
	r.Extra = append(r.Extra, block.String())
	return firstErr
}

// parseBenchLine reads `BenchmarkX  N  123 ns/op  45 B/op  6 allocs/op  7 unit`.
func parseBenchLine(l string) (name string, nsop float64, extra string, ok bool) {
	f := strings.Fields(l)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", 0, "", false
	}
	name = f[0]
	var parts []string
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			continue
		}
		switch unit := f[i+1]; unit {
		case "ns/op":
			nsop, ok = v, true
		case "B/op":
			parts = append(parts, fmt.Sprintf("%.0f B/op", v))
		case "allocs/op":
			parts = append(parts, fmt.Sprintf("%.0f allocs/op", v))
		default:
			parts = append(parts, fmt.Sprintf("%g %s", v, unit))
		}
	}
	if len(parts) > 0 {
		extra = ", " + strings.Join(parts, ", ")
	}
	return name, nsop, extra, ok
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
