package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// runThroughput runs the throughput scenario up to three times: saturated
// (as many executions as the machine completes, and their CPU); with the
// same jobs' crons alone (o.tputCronOnly: no API trigger, so the CPU per
// execution without the trigger stream's requests, most of which only
// collapse into an execution already waiting); and paced at o.tputPaced
// triggers per second over as many jobs, each triggered once a second so
// that no trigger waits for its own job's previous run (the scheduler's
// queueing alone: ready → ACCEPT).
func runThroughput(ctx context.Context, o options, r *report) error {
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
func throughputRun(ctx context.Context, o options, r *report, sc string, jobs, rate int, cron bool) error {
	dir, cleanup, err := tempDir(o.env, "throughput")
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
	p, err := startScheduler(o.binDir, schedDir, args...)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	if _, err := p.waitHealthy(30 * time.Second); err != nil {
		return err
	}
	for a := 0; a < o.tputApps; a++ {
		body := fmt.Sprintf(`{"appName":"tput_app_%d","appURL":"file://%s","bootstrapScript":"run.sh","cpuCount":0.05,"memoryMB":16,"appCacheEnable":true}`, a, script)
		if err := p.api.postJSON("/api/app", body); err != nil {
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
		if err := p.api.postJSON("/api/job/register", body); err != nil {
			return err
		}
	}

	// Bounded trigger stream: `workers` clients, each on its own ticker.
	const workers = 8
	var sent, trigErrs atomic.Int64
	tctx, stopTriggers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if rate > 0 {
		period := time.Duration(float64(time.Second) * workers / float64(rate))
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				t := time.NewTicker(period)
				defer t.Stop()
				for k := w; ; k += workers {
					select {
					case <-tctx.Done():
						return
					case <-t.C:
					}
					if err := p.api.trigger(names[k%len(names)]); err != nil {
						trigErrs.Add(1)
					} else {
						sent.Add(1)
					}
				}
			}(w)
		}
	}
	defer func() { stopTriggers(); wg.Wait() }()

	const warmup = 5 * time.Second
	logf("%s: %d jobs over %d apps, cron every second %v + %d triggers/s; %s warm-up, %s window", sc, jobs, o.tputApps, cron, rate, warmup, o.tputWindow)
	if err := sleepCtx(ctx, warmup); err != nil {
		return err
	}
	m0, err := p.api.scrape()
	if err != nil {
		return err
	}
	s0, err := readProc(p.pid())
	if err != nil {
		return err
	}
	sent0 := sent.Load()
	exec0, busy0 := treeCPU(executorsOf(o.executorPath, p.dataDir, p.pid())), machineBusy()
	prof := filepath.Join(dir, "scheduler.cpu.pprof")
	profDone := make(chan error, 1)
	if o.tputProfile {
		go func() { profDone <- fetchCPUProfile(p.port, max(time.Second, o.tputWindow-2*time.Second), prof) }()
	} else {
		profDone <- nil
	}
	var rss []float64
	seen := map[int]bool{}
	var schedRSSMax int64
	for end := time.Now().Add(o.tputWindow); time.Now().Before(end); {
		for _, pid := range executorsOf(o.executorPath, p.dataDir, p.pid()) {
			if m, err := readMem(pid); err == nil && m.rss > 0 {
				rss = append(rss, float64(m.rss))
				seen[pid] = true
			}
		}
		if m, err := readMem(p.pid()); err == nil && m.rss > schedRSSMax {
			schedRSSMax = m.rss
		}
		if err := sleepCtx(ctx, min(500*time.Millisecond, time.Until(end))); err != nil {
			return err
		}
	}
	s1, err := readProc(p.pid())
	if err != nil {
		return err
	}
	exec1, busy1 := treeCPU(executorsOf(o.executorPath, p.dataDir, p.pid())), machineBusy()
	m1, err := p.api.scrape()
	if err != nil {
		return err
	}
	sentWin := sent.Load() - sent0
	stopTriggers()
	wg.Wait()

	win := s1.taken.Sub(s0.taken).Seconds()
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
	r.add(sc, "setup", fmt.Sprintf("%d jobs/%d apps, --embedded-cpus 2, %s + %.0f triggers/s, %.0f s window", jobs, o.tputApps, crons, float64(sentWin)/win, win), "", nil)
	if cron {
		r.add(sc, "completed transient executions (finished)", fmt.Sprintf("%.0f/s (%.0f in window)", done, fin), "≥ 400/s", ge(done, 400))
	} else {
		r.add(sc, "completed transient executions (finished)", fmt.Sprintf("%.0f/s (%.0f in window)", done, fin), "", nil)
	}
	r.add(sc, "launched; failed; killed in window", fmt.Sprintf("%.0f/s; %.0f; %.0f", launched/win, failed, killed), "", nil)
	r.add(sc, "trigger errors", fmt.Sprintf("%d", trigErrs.Load()), "", nil)
	if fin > 0 && rate > 0 {
		// Each request costs the scheduler its HTTP, its audit row (durable
		// before the answer) and a registry read, whether it queues an
		// execution or collapses into one already waiting (misfire=false).
		r.add(sc, "API trigger requests per completed execution", fmt.Sprintf("%.2f", float64(sentWin)/fin), "", nil)
	}
	r.add(sc, "executor VmRSS max / median", fmt.Sprintf("%s / %s (%d executors, %d samples)", mb(promtext.Max(rss)), mb(promtext.Percentile(rss, .5)), len(seen), len(rss)), "≤ 20 MB", le(promtext.Max(rss)/(1<<20), 20))
	r.add(sc, "scheduler CPU (% of one core) / VmRSS max", fmt.Sprintf("%.0f %% / %s", 100*(s1.cpu-s0.cpu)/win, mb(float64(schedRSSMax))), "", nil)
	if fin > 0 {
		r.add(sc, "CPU per completed execution: scheduler (embedded master and agent included); executors and job processes",
			fmt.Sprintf("%.2f ms; %.2f ms", 1000*(s1.cpu-s0.cpu)/fin, 1000*cpuDelta(exec0, exec1)/fin), "scheduler ≤ 1 ms", le(1000*(s1.cpu-s0.cpu)/fin, 1))
	}
	r.add(sc, "machine CPU busy (all processes, % of the machine's cores)", fmt.Sprintf("%.0f %% of %d", 100*(busy1-busy0)/win/float64(runtime.NumCPU()), runtime.NumCPU()), "", nil)
	if cron {
		r.add(sc, "ready → ACCEPT p50 / p99 under load (bucket ≤; includes waiting for the job's own previous run)", ms(a50)+" / "+ms(a99)+" (≤ "+ms(a99b)+")", "", nil)
	} else {
		r.add(sc, "ready → ACCEPT p50 / p99 (bucket ≤)", ms(a50)+" / "+ms(a99)+" (≤ "+ms(a99b)+")", "p99 ≤ 50 ms", le(a99*1000, 50))
	}
	if err := <-profDone; err != nil {
		r.note(sc + ": scheduler CPU profile: " + err.Error())
	} else if o.tputProfile {
		profileTop(o.binDir, r, sc, "scheduler", prof, "over the window")
	}
	if len(rss) == 0 {
		r.note(sc + ": no executor process was found under /proc for " + o.executorPath)
	}
	return nil
}
