package taskcost

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// result is one side's run.
type result struct {
	finished  float64            // tasks finished in the window
	perSec    float64            // finished per second
	schedMs   float64            // scheduler CPU per finished task
	execMs    float64            // executors' and jobs' CPU per finished task
	trigPer   float64            // API trigger requests per finished task
	startP50  float64            // trigger → process start p50, seconds (under the load)
	starts    int                // how many such samples
	stageFrac map[string]float64 // share of the profile's samples by stage
	load      string             // load average at the start
}

// Run plays the scenario on -bin's scheduler, and on -taskcost-before's
// alternately with it when given, then reports the stage table side by
// side.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	sides := [][2]string{{"after", env.BinDir}}
	if opt.before != "" {
		sides = append(sides, [2]string{"before", opt.before})
	}
	got := map[string][]result{}
	var firstErr error
	for i := 0; i < max(1, opt.repeats) && ctx.Err() == nil; i++ {
		for _, s := range sides {
			load := bench.Loadavg()
			bench.Logf("taskcost: %s (run %d, load average %s)", s[0], i+1, load)
			res, err := runOnce(ctx, env, opt, s[1])
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("taskcost/%s: %w", s[0], err)
				}
				r.Note(fmt.Sprintf("taskcost (%s) could not complete: %v", s[0], bench.FirstLine(err.Error())))
				continue
			}
			res.load = load
			got[s[0]] = append(got[s[0]], res)
		}
	}
	report(r, opt, sides, got)
	return firstErr
}

// runOnce starts a scheduler from bin with the embedded engine, registers
// the jobs, triggers them at opt.rate for a warm-up and the window, and
// profiles the scheduler over the window. A latency job's own trigger,
// every 250 ms under that load, times trigger → process start.
func runOnce(ctx context.Context, env bench.Env, opt Options, bin string) (result, error) {
	var res result
	dir, cleanup, err := bench.TempDir(env, "taskcost")
	if err != nil {
		return res, err
	}
	defer cleanup()
	appDir, schedDir := filepath.Join(dir, "app"), filepath.Join(dir, "sched")
	for _, d := range []string{appDir, schedDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return res, err
		}
	}
	script := filepath.Join(appDir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		return res, err
	}
	startScript, startsFile, err := bench.WriteStartScript(appDir)
	if err != nil {
		return res, err
	}
	p, err := bench.StartScheduler(bin, schedDir, "--embedded-cpus", "2", "--debug-pprof", "true")
	if err != nil {
		return res, err
	}
	defer p.Stop()
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return res, err
	}
	executorPath := filepath.Join(bin, "executor")
	for a := 0; a < opt.apps; a++ {
		body := fmt.Sprintf(`{"appName":"tc_app_%d","appURL":"file://%s","bootstrapScript":"run.sh","cpuCount":0.05,"memoryMB":16,"appCacheEnable":true}`, a, script)
		if err := p.API.PostJSON("/api/app", body); err != nil {
			return res, err
		}
	}
	if err := p.API.PostJSON("/api/app", fmt.Sprintf(`{"appName":"tc_lat","appURL":"file://%s","bootstrapScript":"start.sh","cpuCount":0.05,"memoryMB":16,"appCacheEnable":true}`, startScript)); err != nil {
		return res, err
	}
	names := make([]string, opt.jobs)
	for i := range names {
		names[i] = fmt.Sprintf("tc_job_%03d", i)
		body := fmt.Sprintf(`{"jobName":%q,"appName":"tc_app_%d","jobExecutionType":"TRANSIENT","misfire":false,"shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`, names[i], i%max(1, opt.apps))
		if err := p.API.PostJSON("/api/job/register", body); err != nil {
			return res, err
		}
	}
	if err := p.API.PostJSON("/api/job/register", `{"jobName":"tc_lat_job","appName":"tc_lat","jobExecutionType":"TRANSIENT","misfire":false,"shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return res, err
	}

	trig := bench.StartTriggers(ctx, p.API, names, opt.rate) // eight clients, each on its own ticker
	defer trig.Stop()

	const warmup = 5 * time.Second
	if err := bench.SleepCtx(ctx, warmup); err != nil {
		return res, err
	}
	m0, err := p.API.Scrape()
	if err != nil {
		return res, err
	}
	s0, err := bench.ReadProc(p.PID())
	if err != nil {
		return res, err
	}
	sent0 := trig.Sent.Load()
	exec0 := bench.TreeCPU(bench.ExecutorsOf(executorPath, p.DataDir, p.PID()))
	prof := filepath.Join(dir, "scheduler.cpu.pprof")
	profDone := make(chan error, 1)
	go func() { profDone <- bench.FetchCPUProfile(p.Port, opt.window, prof) }()

	// Trigger → process start of the latency job, one at a time, under the load.
	var lat []float64
	end := time.Now().Add(opt.window)
	for time.Now().Before(end) && ctx.Err() == nil {
		t0 := time.Now()
		if err := p.API.Trigger("tc_lat_job"); err != nil {
			return res, err
		}
		if at, err := bench.WaitStarts(ctx, startsFile, 1, t0, min(5*time.Second, time.Until(end)+time.Second)); err == nil {
			lat = append(lat, at.Sub(t0).Seconds())
		}
		if err := bench.SleepCtx(ctx, min(250*time.Millisecond, time.Until(end))); err != nil {
			return res, err
		}
	}
	if err := <-profDone; err != nil {
		return res, fmt.Errorf("scheduler CPU profile: %w", err)
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return res, err
	}
	exec1 := bench.TreeCPU(bench.ExecutorsOf(executorPath, p.DataDir, p.PID()))
	m1, err := p.API.Scrape()
	if err != nil {
		return res, err
	}
	sentWin := trig.Sent.Load() - sent0
	trig.Stop()

	win := s1.Taken.Sub(s0.Taken).Seconds()
	res.finished = m1.Sum("elasticjob_tasks_ended_total", `result="finished"`) - m0.Sum("elasticjob_tasks_ended_total", `result="finished"`)
	if res.finished <= 0 {
		return res, fmt.Errorf("no task finished in the window")
	}
	res.perSec = res.finished / win
	res.schedMs = 1000 * (s1.CPU - s0.CPU) / res.finished
	res.execMs = 1000 * bench.CPUDelta(exec0, exec1) / res.finished
	res.trigPer = float64(sentWin) / res.finished
	res.startP50, res.starts = promtext.Percentile(lat, .5), len(lat)

	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", "-lines", filepath.Join(bin, "scheduler"), prof).Output()
	if err != nil {
		return res, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	by, total, err := splitTraces(bytes.NewReader(out))
	if err != nil {
		return res, err
	}
	res.stageFrac = map[string]float64{}
	for k, v := range by {
		res.stageFrac[k] = float64(v) / float64(total)
	}
	if env.Keep {
		bench.Logf("taskcost: profile kept at %s", prof)
	}
	return res, nil
}

// report adds the figures and the stage table: each stage's share of the
// scheduler's profile times the scheduler CPU per finished task.
func report(r *bench.Report, opt Options, sides [][2]string, got map[string][]result) {
	const sc = "taskcost"
	r.Add(sc, "setup", fmt.Sprintf("%d jobs (no cron, misfire=false) over %d apps, --embedded-cpus 2, %d API triggers/s round-robin, %s window after 5 s warm-up; profile of the scheduler over the window",
		opt.jobs, opt.apps, opt.rate, opt.window), "", nil)
	for _, s := range sides {
		for i, res := range got[s[0]] {
			who := fmt.Sprintf("%s #%d", s[0], i+1)
			r.Add(sc, who+": load average at start", res.load, "", nil)
			r.Add(sc, who+": finished tasks", fmt.Sprintf("%.0f/s (%.0f in window); %.2f trigger requests per finished task", res.perSec, res.finished, res.trigPer), "", nil)
			r.Add(sc, who+": scheduler CPU per finished task (embedded master and agent included)", fmt.Sprintf("%.2f ms", res.schedMs), "≤ 1 ms", bench.Le(res.schedMs, 1))
			r.Add(sc, who+": executors' and jobs' CPU per finished task", fmt.Sprintf("%.2f ms", res.execMs), "", nil)
			r.Add(sc, who+": trigger → process start p50 under the load", fmt.Sprintf("%s (%d samples)", bench.Ms(res.startP50), res.starts), "", nil)
		}
	}
	// The stage table: ms per finished task by stage, each side's runs
	// averaged.
	var b strings.Builder
	cols := []string{}
	for _, s := range sides {
		if len(got[s[0]]) > 0 {
			cols = append(cols, s[0])
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(&b, "taskcost: scheduler CPU per finished task by stage (ms; share of the scheduler's profile × CPU per task)\n")
	fmt.Fprintf(&b, "%-48s", "stage")
	for _, c := range cols {
		fmt.Fprintf(&b, " %14s", c)
	}
	b.WriteString("\n")
	rows := stageNames()
	sort.SliceStable(rows, func(i, j int) bool { return avgMs(got[cols[0]], rows[i]) > avgMs(got[cols[0]], rows[j]) })
	for _, st := range append(rows, "total") {
		fmt.Fprintf(&b, "%-48s", st)
		for _, c := range cols {
			fmt.Fprintf(&b, " %8.3f %4.0f%%", avgMs(got[c], st), 100*avgFrac(got[c], st))
		}
		b.WriteString("\n")
	}
	r.Extra = append(r.Extra, b.String())
}

func avgMs(rs []result, st string) float64 {
	var s float64
	for _, r := range rs {
		if st == "total" {
			s += r.schedMs
		} else {
			s += r.stageFrac[st] * r.schedMs
		}
	}
	return s / float64(max(1, len(rs)))
}

func avgFrac(rs []result, st string) float64 {
	if st == "total" {
		return 1
	}
	var s float64
	for _, r := range rs {
		s += r.stageFrac[st]
	}
	return s / float64(max(1, len(rs)))
}
