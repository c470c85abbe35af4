package throughput

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// Run runs the throughput scenario up to three times: saturated
// (as many executions as the machine completes, and their CPU); with the
// same jobs' crons alone (o.tputCronOnly: no API trigger, so the CPU per
// execution without the trigger stream's requests, most of which only
// collapse into an execution already waiting); and paced at o.tputPaced
// triggers per second over as many jobs, each triggered once a second so
// that no trigger waits for its own job's previous run (the scheduler's
// queueing alone: ready → ACCEPT).
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	if err := throughputRun(ctx, o, r, "throughput", o.tputJobs, o.tputRate, true); err != nil {
		return err
	}
	o.tputProfile = false
	if o.tputCronOnly && o.tputRate > 0 {
		if err := throughputRun(ctx, o, r, "throughput/cron-only", o.tputJobs, 0, true); err != nil {
			return err
		}
	}
	if o.tputPaced <= 0 {
		return nil
	}
	return throughputRun(ctx, o, r, fmt.Sprintf("throughput/%d-per-s", o.tputPaced), o.tputPaced, o.tputPaced, false)
}

// throughputRun measures completed transient executions per second on the
// embedded cluster (--embedded-cpus 2): jobs one-shard jobs (firing every
// second when cron, misfire=false) plus a bounded stream of rate API
// triggers per second round-robin over them, over a fixed window, while
// sampling every executor's VmRSS.
func throughputRun(ctx context.Context, o options, r *bench.Report, sc string, jobs, rate int, cron bool) error {
	dir, cleanup, err := bench.TempDir(o.Env, "throughput")
	if err != nil {
		return err
	}
	defer cleanup()
	appDir, schedDir := filepath.Join(dir, "app"), filepath.Join(dir, "sched")
	for _, d := range []string{appDir, schedDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	script := filepath.Join(appDir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		return err
	}
	args := []string{"--embedded-cpus", "2"}
	if o.tputProfile {
		args = append(args, "--debug-pprof", "true")
	}
	p, err := bench.StartScheduler(o.BinDir, schedDir, args...)
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	for a := 0; a < o.tputApps; a++ {
		body := fmt.Sprintf(`{"appName":"tput_app_%d","appURL":"file://%s","bootstrapScript":"run.sh","cpuCount":0.05,"memoryMB":16,"appCacheEnable":true}`, a, script)
		if err := p.API.PostJSON("/api/app", body); err != nil {
			return err
		}
	}
	cronField := ""
	if cron {
		cronField = `"cron":"* * * * * ?",`
	}
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("tput_job_%03d", i)
		body := fmt.Sprintf(`{"jobName":%q,"appName":"tput_app_%d","jobExecutionType":"TRANSIENT",%s"misfire":false,"shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`, names[i], i%o.tputApps, cronField)
		if err := p.API.PostJSON("/api/job/register", body); err != nil {
			return err
		}
	}

	trig := bench.StartTriggers(ctx, p.API, names, rate) // bounded: eight clients, each on its own ticker
	defer trig.Stop()

	const warmup = 5 * time.Second
	bench.Logf("%s: %d jobs over %d apps, cron every second %v + %d triggers/s; %s warm-up, %s window", sc, jobs, o.tputApps, cron, rate, warmup, o.tputWindow)
	if err := bench.SleepCtx(ctx, warmup); err != nil {
		return err
	}
	m0, err := p.API.Scrape()
	if err != nil {
		return err
	}
	s0, err := bench.ReadProc(p.PID())
	if err != nil {
		return err
	}
	sent0 := trig.Sent.Load()
	exec0, busy0 := bench.TreeCPU(bench.ExecutorsOf(o.ExecutorPath, p.DataDir, p.PID())), bench.MachineBusy()
	prof := filepath.Join(dir, "scheduler.cpu.pprof")
	profDone := make(chan error, 1)
	if o.tputProfile {
		go func() { profDone <- bench.FetchCPUProfile(p.Port, max(time.Second, o.tputWindow-2*time.Second), prof) }()
	} else {
		profDone <- nil
	}
	var rss []float64
	seen := map[int]bool{}
	var schedRSSMax int64
	for end := time.Now().Add(o.tputWindow); time.Now().Before(end); {
		for _, pid := range bench.ExecutorsOf(o.ExecutorPath, p.DataDir, p.PID()) {
			if m, err := bench.ReadMem(pid); err == nil && m.RSS > 0 {
				rss = append(rss, float64(m.RSS))
				seen[pid] = true
			}
		}
		if m, err := bench.ReadMem(p.PID()); err == nil && m.RSS > schedRSSMax {
			schedRSSMax = m.RSS
		}
		if err := bench.SleepCtx(ctx, min(500*time.Millisecond, time.Until(end))); err != nil {
			return err
		}
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return err
	}
	exec1, busy1 := bench.TreeCPU(bench.ExecutorsOf(o.ExecutorPath, p.DataDir, p.PID())), bench.MachineBusy()
	m1, err := p.API.Scrape()
	if err != nil {
		return err
	}
	sentWin := trig.Sent.Load() - sent0
	trig.Stop()

	win := s1.Taken.Sub(s0.Taken).Seconds()
	d := func(name string, want ...string) float64 { return m1.Sum(name, want...) - m0.Sum(name, want...) }
	fin := d("elasticjob_tasks_ended_total", `result="finished"`)
	failed := d("elasticjob_tasks_ended_total", `result="failed"`)
	killed := d("elasticjob_tasks_ended_total", `result="killed"`)
	launched := d("elasticjob_tasks_launched_total")
	done := fin / win
	h := m1.Histogram("elasticjob_ready_to_accept_seconds").Minus(m0.Histogram("elasticjob_ready_to_accept_seconds"))
	a50, _ := h.Quantile(.5)
	a99, a99b := h.Quantile(.99)
	crons := "no cron"
	if cron {
		crons = "cron 1/s each"
	}
	r.Add(sc, "setup", fmt.Sprintf("%d jobs/%d apps, --embedded-cpus 2, %s + %.0f triggers/s, %.0f s window", jobs, o.tputApps, crons, float64(sentWin)/win, win), "", nil)
	if cron {
		r.Add(sc, "completed transient executions (finished)", fmt.Sprintf("%.0f/s (%.0f in window)", done, fin), "≥ 400/s", bench.Ge(done, 400))
	} else {
		r.Add(sc, "completed transient executions (finished)", fmt.Sprintf("%.0f/s (%.0f in window)", done, fin), "", nil)
	}
	r.Add(sc, "launched; failed; killed in window", fmt.Sprintf("%.0f/s; %.0f; %.0f", launched/win, failed, killed), "", nil)
	r.Add(sc, "trigger errors", fmt.Sprintf("%d", trig.Failed.Load()), "", nil)
	if fin > 0 && rate > 0 {
		// Each request costs the scheduler its HTTP, its audit row (durable
		// before the answer) and a registry read, whether it queues an
		// execution or collapses into one already waiting (misfire=false).
		r.Add(sc, "API trigger requests per completed execution", fmt.Sprintf("%.2f", float64(sentWin)/fin), "", nil)
	}
	r.Add(sc, "executor VmRSS max / median", fmt.Sprintf("%s / %s (%d executors, %d samples)", bench.MB(promtext.Max(rss)), bench.MB(promtext.Percentile(rss, .5)), len(seen), len(rss)), "≤ 20 MB", bench.Le(promtext.Max(rss)/(1<<20), 20))
	r.Add(sc, "scheduler CPU (% of one core) / VmRSS max", fmt.Sprintf("%.0f %% / %s", 100*(s1.CPU-s0.CPU)/win, bench.MB(float64(schedRSSMax))), "", nil)
	if fin > 0 {
		r.Add(sc, "CPU per completed execution: scheduler (embedded master and agent included); executors and job processes",
			fmt.Sprintf("%.2f ms; %.2f ms", 1000*(s1.CPU-s0.CPU)/fin, 1000*bench.CPUDelta(exec0, exec1)/fin), "scheduler ≤ 1 ms", bench.Le(1000*(s1.CPU-s0.CPU)/fin, 1))
	}
	r.Add(sc, "machine CPU busy (all processes, % of the machine's cores)", fmt.Sprintf("%.0f %% of %d", 100*(busy1-busy0)/win/float64(runtime.NumCPU()), runtime.NumCPU()), "", nil)
	if cron {
		r.Add(sc, "ready → ACCEPT p50 / p99 under load (bucket ≤; includes waiting for the job's own previous run)", bench.Ms(a50)+" / "+bench.Ms(a99)+" (≤ "+bench.Ms(a99b)+")", "", nil)
	} else {
		r.Add(sc, "ready → ACCEPT p50 / p99 (bucket ≤)", bench.Ms(a50)+" / "+bench.Ms(a99)+" (≤ "+bench.Ms(a99b)+")", "p99 ≤ 50 ms", bench.Le(a99*1000, 50))
	}
	if err := <-profDone; err != nil {
		r.Note(sc + ": scheduler CPU profile: " + err.Error())
	} else if o.tputProfile {
		bench.ProfileTop(o.BinDir, r, sc, "scheduler", prof, "over the window")
	}
	if len(rss) == 0 {
		r.Note(sc + ": no executor process was found under /proc for " + o.ExecutorPath)
	}
	return nil
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
