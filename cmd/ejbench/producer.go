package main

import (
	"context"

	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// closedMesos is a loopback URL nothing listens on: the scheduler keeps
// re-subscribing and never launches, so its producer is measured alone.
const closedMesos = "http://127.0.0.1:1"

// cronFor gives job i a distinct Quartz expression that fires exactly once
// an hour: (second, minute) = slot i mod 3600, and the year range
// `Y-(Y+k)` (k = i / 3600) makes every string unique while still covering
// this year. 100,000 jobs → ~27.8 fires per second spread evenly.
func cronFor(i, year int) (string, error) {
	slot, k := i%3600, i/3600
	if year+k > 2199 {
		return "", fmt.Errorf("job %d: more than %d distinct hourly crons", i, 3600*(2199-year+1))
	}
	return fmt.Sprintf("%d %d * * * ? %d-%d", slot%60, slot/60, year, year+k), nil
}

func runRegisterProducer(ctx context.Context, o options, r *report) error {
	dir, cleanup, err := tempDir(o.env, "producer")
	if err != nil {
		return err
	}
	defer cleanup()
	p, err := startScheduler(o.binDir, dir, "--mesos-url", closedMesos)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	if _, err := p.waitHealthy(30 * time.Second); err != nil {
		return err
	}
	if err := p.api.postJSON("/api/app", `{"appName":"bench_app","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":32}`); err != nil {
		return err
	}

	// 1. Registration throughput.
	year := time.Now().Year()
	logf("registering %d TRANSIENT jobs with distinct hourly crons, %d keep-alive clients", o.jobs, o.workers)
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	lat := make([][]float64, o.workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < o.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil && failures.Load() < 100 {
				i := int(next.Add(1) - 1)
				if i >= o.jobs {
					return
				}
				cron, err := cronFor(i, year)
				if err == nil {
					body := fmt.Sprintf(`{"jobName":"job-%06d","appName":"bench_app","jobExecutionType":"TRANSIENT","cron":%q,"shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`, i, cron)
					s := time.Now()
					err = p.api.postJSON("/api/job/register", body)
					lat[w] = append(lat[w], time.Since(s).Seconds())
				}
				if err != nil {
					failures.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var all []float64
	for _, l := range lat {
		all = append(all, l...)
	}
	ok := len(all) - int(failures.Load())
	rate := float64(ok) / elapsed.Seconds()
	r.add("register", fmt.Sprintf("jobs registered (%d clients)", o.workers), fmt.Sprintf("%d in %.1f s, %d errors", ok, elapsed.Seconds(), failures.Load()), "", nil)
	r.add("register", "registration throughput", fmt.Sprintf("%.0f jobs/s", rate), "≥ 1000 jobs/s", ge(rate, 1000))
	r.add("register", "request latency p50 / p99", ms(promtext.Percentile(all, .5))+" / "+ms(promtext.Percentile(all, .99)), "", nil)
	if firstErr != nil {
		r.note("registration: first error: " + firstErr.Error())
		if failures.Load() >= 100 {
			return fmt.Errorf("registration aborted after 100 errors: %w", firstErr)
		}
	}
	if st, err := readProc(p.pid()); err == nil {
		r.add("register", "scheduler RSS after registration (VmRSS / VmHWM)", mb(float64(st.rss))+" / "+mb(float64(st.hwm)), "", nil)
	}
	if !o.only["producer"] {
		return nil
	}

	// 2. Producer at scale, measured alone.
	logf("producer: settling %s, then observing %s (Mesos URL %s is closed: nothing launches)", o.settle, o.window, closedMesos)
	if err := sleepCtx(ctx, o.settle); err != nil {
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
	var rssMax int64
	for end := time.Now().Add(o.window); time.Now().Before(end); {
		if err := sleepCtx(ctx, min(5*time.Second, time.Until(end))); err != nil {
			return err
		}
		if m, err := readMem(p.pid()); err == nil && m.rss > rssMax {
			rssMax = m.rss
		}
	}
	s1, err := readProc(p.pid())
	if err != nil {
		return err
	}
	m1, err := p.api.scrape()
	if err != nil {
		return err
	}
	win := s1.taken.Sub(s0.taken).Seconds()
	cpu := 100 * (s1.cpu - s0.cpu) / win
	h := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	p50, _ := h.Quantile(.5)
	p99, p99b := h.Quantile(.99)
	_, maxB := h.MaxBound()
	const sc = "producer"
	r.add(sc, "setup", fmt.Sprintf("%d jobs, %.0f s window, Mesos closed (no launches)", ok, win), "", nil)
	r.add(sc, "fires observed (rate)", fmt.Sprintf("%.0f (%.1f/s)", h.Count, h.Count/win), fmt.Sprintf("≈ %.1f/s", float64(ok)/3600), nil)
	r.add(sc, "scheduler VmRSS (end of window; max sampled)", mb(float64(s1.rss))+"; "+mb(float64(max(rssMax, s1.rss))), "≤ 300 MB", le(float64(max(rssMax, s1.rss))/(1<<20), 300))
	r.add(sc, "scheduler VmHWM (peak since start, incl. registration)", mb(float64(s1.hwm)), "", nil)
	r.add(sc, "scheduler CPU over window (% of one core)", fmt.Sprintf("%.2f %%", cpu), "≤ 2 %", le(cpu, 2))
	r.add(sc, "fire lateness p50 (interpolated)", ms(p50), "", nil)
	r.add(sc, "fire lateness p99 (interpolated; bucket ≤)", ms(p99)+" (≤ "+ms(p99b)+")", "≤ 5 ms", le(p99, 0.005))
	r.add(sc, "fire lateness max (bucket upper bound)", "≤ "+ms(maxB), "", nil)
	r.add(sc, "fire lateness mean", ms(h.Sum/math.Max(h.Count, 1)), "", nil)

	// Restart on the 100k-job data directory.
	logf("restarting the scheduler on the %d-job data directory", ok)
	p.stop()
	p2, err := startScheduler(o.binDir, dir, "--mesos-url", closedMesos)
	if err != nil {
		return err
	}
	p = p2
	health, err := p.waitHealthy(120 * time.Second)
	if err != nil {
		return err
	}
	var firstFire time.Duration
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if ms, err := p.api.scrape(); err == nil && ms["elasticjob_fire_lateness_seconds_count"] > 0 {
			firstFire = time.Since(p.started)
			break
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	r.add("restart", "restart on 100k jobs: until /healthz answers", fmt.Sprintf("%.2f s", health.Seconds()), "", nil)
	if firstFire == 0 {
		r.add("restart", "restart on 100k jobs: until first fire", "none within 60 s", "", nil)
	} else {
		r.add("restart", "restart on 100k jobs: until first fire observed", fmt.Sprintf("%.2f s", firstFire.Seconds()), "", nil)
	}
	if m, err := readMem(p.pid()); err == nil {
		r.add("restart", "restarted scheduler VmRSS / VmHWM", mb(float64(m.rss))+" / "+mb(float64(m.hwm)), "", nil)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
