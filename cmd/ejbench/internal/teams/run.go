package teams

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// Run plays the teams' three scenarios on real schedulers (-bin, and
// -teams-before's bin dir alternately with it when given), then the
// virtual-time simulation of the same scenarios (round's
// BenchmarkRealRun), and reports them side by side.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	sides := [][2]string{{"after", o.BinDir}}
	if o.teamsBefore != "" {
		sides = append(sides, [2]string{"before", o.teamsBefore})
	}
	sim, simErr := teamsSim(ctx)
	if simErr != nil {
		r.Note("teams: the simulation did not run: " + bench.FirstLine(simErr.Error()))
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, sc := range []struct {
		name string
		run  func(context.Context, options, *bench.Report, string, string, map[string]float64) error
	}{{"two-team", teamsTwoTeam}, {"whole-guarantee", teamsWholeGuarantee}, {"weights", teamsWeights}} {
		if !o.teamsParts[sc.name] {
			continue
		}
		for i := 0; i < o.teamsRepeats && ctx.Err() == nil; i++ {
			for _, s := range sides {
				bench.Logf("teams/%s: %s (run %d, load average %s)", sc.name, s[0], i+1, bench.Loadavg())
				if err := sc.run(ctx, o, r, s[0], s[1], sim[sc.name]); err != nil {
					keep(fmt.Errorf("%s/%s: %w", sc.name, s[0], err))
					r.Note(fmt.Sprintf("teams/%s (%s) could not complete: %v", sc.name, s[0], bench.FirstLine(err.Error())))
				}
			}
		}
	}
	return firstErr
}

// lateRows reports a series of fire latenesses from the job's own clock.
func lateRows(r *bench.Report, scenario, who string, late []float64, sim map[string]float64) {
	var fin []float64
	over := 0
	for _, l := range late {
		if l > 1 {
			over++
		}
		if !math.IsInf(l, 1) {
			fin = append(fin, l)
		}
	}
	mx := promtext.Max(fin)
	if len(fin) < len(late) {
		mx = math.Inf(1)
	}
	simOf := func(k string) string {
		if v, ok := sim[k]; ok {
			return fmt.Sprintf("; sim %s", bench.Ms(v/1000))
		}
		return ""
	}
	p50 := promtext.Percentile(fin, .5)
	r.Add(scenario, who+" fire → process start p50 (job's clock)", bench.Ms(p50)+simOf("late-p50-ms"), "≤ 50 ms", bench.Le(p50, 0.05))
	r.Add(scenario, who+" fire → process start p99", bench.Ms(promtext.Percentile(fin, .99))+simOf("late-p99-ms"), "", nil)
	r.Add(scenario, who+" fire → process start max", bench.Ms(mx)+simOf("late-max-ms"), "≤ 1 s", bench.Le(mx, 1))
	simOver := ""
	if v, ok := sim["late-over-1s"]; ok {
		simOver = fmt.Sprintf("; sim %.0f of %.0f", v, sim["fires"])
	}
	r.Add(scenario, who+" fires more than 1 s late", fmt.Sprintf("%d of %d%s", over, len(late), simOver), "0", bench.Le(float64(over), 0))
}

// teamsTwoTeam is the scenario: pay (guarantee 1 CPU, limit 2)
// triggers twelve 0.9-CPU runs of 6 s at once; search (guarantee 0.5 CPU)
// has a 0.1-CPU job on 0/5 * * * * ?. Each app's executor holds 0.05 CPU.
func teamsTwoTeam(ctx context.Context, o options, r *bench.Report, side, bin string, sim map[string]float64) error {
	g, stop, err := startTeamRig(ctx, o, side, bin, "two-team")
	if err != nil {
		return err
	}
	defer stop()
	for _, step := range []func() error{
		func() error {
			return g.ns("pay", `{"guarantee":{"cpuCount":1,"memoryMB":2048},"limit":{"cpuCount":2,"memoryMB":4096}}`)
		},
		func() error { return g.ns("search", `{"guarantee":{"cpuCount":0.5,"memoryMB":1024}}`) },
		func() error { return g.app("pay", 0.05) },
		func() error { return g.app("search", 0.05) },
		func() error { return g.job("search", "index", 0.1, 0.2, "0/5 * * * * ?", false) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	for i := range 12 {
		if err := g.job("pay", fmt.Sprintf("burst-%02d", i), 0.9, 6, "", false); err != nil {
			return err
		}
	}
	// Search's first run fetches its app: the burst starts after it.
	if err := g.waitStarts(ctx, "search", "index", 1, 30*time.Second); err != nil {
		return err
	}
	h0 := g.lateness("search")
	t0 := time.Now()
	for i := range 12 {
		if err := g.trigger("pay", fmt.Sprintf("burst-%02d", i)); err != nil {
			return err
		}
	}
	deadline := t0.Add(o.teamsBurstMax)
	var ev []teamEvent
	for ctx.Err() == nil && time.Now().Before(deadline) {
		ev = readTeamEvents(g.out)
		if countEnds(ev, "pay") >= 12 {
			break
		}
		_ = bench.SleepCtx(ctx, 250*time.Millisecond)
	}
	payEnd := lastEnd(ev, "pay")
	if countEnds(ev, "pay") < 12 {
		payEnd = time.Now()
		r.Note(fmt.Sprintf("teams/two-team (%s): %d of pay's 12 runs ended within %s", side, countEnds(ev, "pay"), o.teamsBurstMax))
	}
	// The fires during the burst; the run serving the last may start after it.
	fires := cronFires(5*time.Second, t0, payEnd)
	_ = bench.SleepCtx(ctx, 6*time.Second)
	ev = readTeamEvents(g.out)
	scen := "teams two-team (" + side + ")"
	lateRows(r, scen, "search", fireLateness(ev, "search", "index", fires), sim)
	histRow(r, scen, "search", g.lateness("search").Minus(h0))
	g.lateNotes(r, scen, "search")
	held := cpuSeconds(ev, map[string]float64{"pay": 0.9}, t0, payEnd)["pay"]
	took := payEnd.Sub(t0).Seconds()
	simDone := ""
	if v, ok := sim["pay-done-s"]; ok {
		simDone = fmt.Sprintf("; sim %.1f s", v)
	}
	r.Add(scen, "pay's 12 runs: trigger → last end", fmt.Sprintf("%.1f s%s", took, simDone), "", nil)
	r.Add(scen, "pay's throughput (CPUs its runs held, mean)", fmt.Sprintf("%.2f CPU", held/took), "≥ 1.5 CPU", bench.Ge(held/took, 1.5))
	return nil
}

// teamsWholeGuarantee: core's fires need its whole guarantee (0.95 CPU
// and a 0.05-CPU executor of a 1-CPU guarantee, 2 s every 5 s) while two
// namespaces without capacity each trigger twelve 0.9-CPU runs of 6 s.
func teamsWholeGuarantee(ctx context.Context, o options, r *bench.Report, side, bin string, sim map[string]float64) error {
	g, stop, err := startTeamRig(ctx, o, side, bin, "whole")
	if err != nil {
		return err
	}
	defer stop()
	if err := g.ns("core", `{"guarantee":{"cpuCount":1,"memoryMB":1024}}`); err != nil {
		return err
	}
	if err := g.app("core", 0.05); err != nil {
		return err
	}
	if err := g.job("core", "tick", 0.95, 2, "0/5 * * * * ?", false); err != nil {
		return err
	}
	for _, ns := range []string{"b1", "b2"} {
		if err := g.ns(ns, ""); err != nil {
			return err
		}
		if err := g.app(ns, 0.05); err != nil {
			return err
		}
		for i := range 12 {
			if err := g.job(ns, fmt.Sprintf("burst-%02d", i), 0.9, 6, "", false); err != nil {
				return err
			}
		}
	}
	if err := g.waitStarts(ctx, "core", "tick", 1, 30*time.Second); err != nil {
		return err
	}
	h0 := g.lateness("core")
	t0 := time.Now()
	for i := range 12 {
		for _, ns := range []string{"b1", "b2"} {
			if err := g.trigger(ns, fmt.Sprintf("burst-%02d", i)); err != nil {
				return err
			}
		}
	}
	end := t0.Add(o.teamsBurstMax)
	for ctx.Err() == nil && time.Now().Before(end) {
		ev := readTeamEvents(g.out)
		if countEnds(ev, "b1")+countEnds(ev, "b2") >= 24 {
			end = lastEnd(ev, "b1", "b2")
			break
		}
		_ = bench.SleepCtx(ctx, 250*time.Millisecond)
	}
	fires := cronFires(5*time.Second, t0, end)
	_ = bench.SleepCtx(ctx, 6*time.Second)
	ev := readTeamEvents(g.out)
	scen := "teams whole-guarantee (" + side + ")"
	lateRows(r, scen, "core", fireLateness(ev, "core", "tick", fires), sim)
	histRow(r, scen, "core", g.lateness("core").Minus(h0))
	g.lateNotes(r, scen, "core")
	r.Add(scen, "b1+b2's 24 runs: trigger → last end", fmt.Sprintf("%.1f s", end.Sub(t0).Seconds()), "", nil)
	return nil
}

// teamsWeights: three namespaces with weights 1:1:2, no guarantee, each
// backlogged (six 0.3-CPU jobs of 2 s each, triggered every 500 ms) for
// -teams-weights-window; each one's share of the CPU·seconds its runs
// held (from their own clocks) against its weight's.
func teamsWeights(ctx context.Context, o options, r *bench.Report, side, bin string, sim map[string]float64) error {
	g, stop, err := startTeamRig(ctx, o, side, bin, "weights")
	if err != nil {
		return err
	}
	defer stop()
	weights := map[string]float64{"w1": 1, "w2": 1, "w3": 2}
	names := []string{"w1", "w2", "w3"}
	for _, ns := range names {
		if err := g.ns(ns, fmt.Sprintf(`{"weight":%g}`, weights[ns])); err != nil {
			return err
		}
		if err := g.app(ns, 0.05); err != nil {
			return err
		}
		for i := range 6 {
			if err := g.job(ns, fmt.Sprintf("work-%d", i), 0.3, 2, "", false); err != nil {
				return err
			}
		}
	}
	warm := 10 * time.Second
	t0 := time.Now()
	from, to := t0.Add(warm), t0.Add(warm+o.teamsWeightsWindow)
	for ctx.Err() == nil && time.Now().Before(to) {
		for _, ns := range names {
			for i := range 6 {
				if err := g.trigger(ns, fmt.Sprintf("work-%d", i)); err != nil {
					return err
				}
			}
		}
		_ = bench.SleepCtx(ctx, 500*time.Millisecond)
	}
	ev := readTeamEvents(g.out)
	held := cpuSeconds(ev, map[string]float64{"w1": 0.3, "w2": 0.3, "w3": 0.3}, from, to)
	total := 0.0
	for _, ns := range names {
		total += held[ns]
	}
	scen := "teams weights (" + side + ")"
	worst := 0.0
	var parts []string
	for _, ns := range names {
		share, want := held[ns]/total, weights[ns]/4
		worst = math.Max(worst, math.Abs(share/want-1))
		s := fmt.Sprintf("%s %.1f%%", ns, 100*share)
		if v, ok := sim["share-"+ns]; ok {
			s += fmt.Sprintf(" (sim %.1f%%)", v)
		}
		parts = append(parts, s)
	}
	r.Add(scen, fmt.Sprintf("shares of runs' CPU·s over %s (weights 25/25/50 %%)", o.teamsWeightsWindow), strings.Join(parts, ", "), "", nil)
	r.Add(scen, "worst share off its weight's", fmt.Sprintf("%.1f %%", 100*worst), "≤ 10 %", bench.Le(worst, 0.1))
	r.Add(scen, "CPUs the runs held, mean", fmt.Sprintf("%.2f CPU", total/o.teamsWeightsWindow.Seconds()), "", nil)
	return nil
}

// lateness is the scheduler's per-namespace fire lateness histogram (fire
// → the ACCEPT that launches it) now.
func (g *teamRig) lateness(ns string) promtext.Histogram {
	m, err := g.p.API.Scrape()
	if err != nil {
		return promtext.Histogram{}
	}
	return m.Histogram("elasticjob_namespace_fire_lateness_seconds", `namespace="`+ns+`"`)
}

// lateNotes notes why each of ns's late runs was late, as the scheduler
// says it (GET /api/namespaces/{ns}/usage's lateRuns; the code before
// has none).
func (g *teamRig) lateNotes(r *bench.Report, scenario, ns string) {
	code, b, err := g.p.API.Do(http.MethodGet, "/api/namespaces/"+ns+"/usage", "", nil)
	if err != nil || code != http.StatusOK {
		return
	}
	var u struct {
		LateRuns []struct{ JobName, Why string }
	}
	if json.Unmarshal(b, &u) != nil {
		return
	}
	for _, l := range u.LateRuns {
		r.Note(fmt.Sprintf("%s: %s's %s %s", scenario, ns, l.JobName, l.Why))
	}
}

// histRow reports what the scheduler's histogram says of the same fires
// (bucketed: p50 interpolated, the highest bucket's bound).
func histRow(r *bench.Report, scenario, who string, h promtext.Histogram) {
	if h.Count <= 0 {
		r.Add(scenario, who+" fire → ACCEPT (the scheduler's histogram)", "no observations", "", nil)
		return
	}
	p50, _ := h.Quantile(.5)
	lo, hi := h.MaxBound()
	r.Add(scenario, who+" fire → ACCEPT (the scheduler's histogram)", fmt.Sprintf("%.0f fires, p50 ≈ %s, max in (%s, %s]", h.Count, bench.Ms(p50), bench.Ms(lo), bench.Ms(hi)), "", nil)
}

func countEnds(ev []teamEvent, ns string) int {
	n := 0
	for _, e := range ev {
		if !e.start && e.ns == ns {
			n++
		}
	}
	return n
}

func lastEnd(ev []teamEvent, nss ...string) time.Time {
	var t time.Time
	for _, e := range ev {
		for _, ns := range nss {
			if !e.start && e.ns == ns && e.at.After(t) {
				t = e.at
			}
		}
	}
	return t
}

// teamsSim runs round's BenchmarkRealRun (the same scenarios in virtual
// time) and returns each sub-benchmark's reported metrics by scenario.
func teamsSim(ctx context.Context) (map[string]map[string]float64, error) {
	args := []string{"test", "-run", "^$", "-bench", "^BenchmarkRealRun$", "-benchtime", "1x", "-count", "1", "./round/"}
	bench.Logf("go %s", strings.Join(args, " "))
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test ./round: %v\n%s", err, out)
	}
	return parseSimBench(string(out)), nil
}

// parseSimBench reads "BenchmarkRealRun/NAME-P  1  N ns/op  V unit  …".
func parseSimBench(out string) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkRealRun/") {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkRealRun/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		res[name] = m
	}
	return res
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
