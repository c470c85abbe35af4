package producer

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
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

// Run registers -jobs jobs through the API (register), and with
// withProducer measures the cron producer alone over -window, then a
// restart (producer).
func Run(ctx context.Context, env bench.Env, opt Options, withProducer bool, r *bench.Report) error {
	return run(ctx, options{Env: env, Options: opt, withProducer: withProducer}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	dir, cleanup, err := bench.TempDir(o.Env, "producer")
	if err != nil {
		return err
	}
	defer cleanup()
	p, err := bench.StartScheduler(o.BinDir, dir, "--mesos-url", closedMesos, "--allow-file-app-urls=true")
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	if err := p.API.PostJSON("/api/app", `{"appName":"bench_app","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":32}`); err != nil {
		return err
	}

	// 1. Registration throughput.
	year := time.Now().Year()
	bench.Logf("registering %d TRANSIENT jobs with distinct hourly crons, %d keep-alive clients", o.jobs, o.Workers)
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	lat := make([][]float64, o.Workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < o.Workers; w++ {
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
					err = p.API.PostJSON("/api/job/register", body)
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
	r.Add("register", fmt.Sprintf("jobs registered (%d clients)", o.Workers), fmt.Sprintf("%d in %.1f s, %d errors", ok, elapsed.Seconds(), failures.Load()), "", nil)
	r.Add("register", "registration throughput", fmt.Sprintf("%.0f jobs/s", rate), "≥ 1000 jobs/s", bench.Ge(rate, 1000))
	r.Add("register", "request latency p50 / p99", bench.Ms(promtext.Percentile(all, .5))+" / "+bench.Ms(promtext.Percentile(all, .99)), "", nil)
	if firstErr != nil {
		r.Note("registration: first error: " + firstErr.Error())
		if failures.Load() >= 100 {
			return fmt.Errorf("registration aborted after 100 errors: %w", firstErr)
		}
	}
	if st, err := bench.ReadProc(p.PID()); err == nil {
		r.Add("register", "scheduler RSS after registration (VmRSS / VmHWM)", bench.MB(float64(st.RSS))+" / "+bench.MB(float64(st.HWM)), "", nil)
	}
	if !o.withProducer {
		return nil
	}
	if err := registerWorkflows(p, o.workflows); err != nil {
		return err
	}

	// 2. Producer at scale, measured alone.
	bench.Logf("producer: settling %s, then observing %s (Mesos URL %s is closed: nothing launches)", o.settle, o.window, closedMesos)
	if err := bench.SleepCtx(ctx, o.settle); err != nil {
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
	var rssMax int64
	for end := time.Now().Add(o.window); time.Now().Before(end); {
		if err := bench.SleepCtx(ctx, min(5*time.Second, time.Until(end))); err != nil {
			return err
		}
		if m, err := bench.ReadMem(p.PID()); err == nil && m.RSS > rssMax {
			rssMax = m.RSS
		}
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return err
	}
	m1, err := p.API.Scrape()
	if err != nil {
		return err
	}
	win := s1.Taken.Sub(s0.Taken).Seconds()
	cpu := 100 * (s1.CPU - s0.CPU) / win
	h := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	p50, _ := h.Quantile(.5)
	p99, p99b := h.Quantile(.99)
	_, maxB := h.MaxBound()
	const sc = "producer"
	r.Add(sc, "setup", fmt.Sprintf("%d jobs, %.0f s window, Mesos closed (no launches)", ok, win), "", nil)
	r.Add(sc, "fires observed (rate)", fmt.Sprintf("%.0f (%.1f/s)", h.Count, h.Count/win), fmt.Sprintf("≈ %.1f/s", float64(ok)/3600), nil)
	r.Add(sc, "scheduler VmRSS (end of window; max sampled)", bench.MB(float64(s1.RSS))+"; "+bench.MB(float64(max(rssMax, s1.RSS))), "≤ 300 MB", bench.Le(float64(max(rssMax, s1.RSS))/(1<<20), 300))
	r.Add(sc, "scheduler VmHWM (peak since start, incl. registration)", bench.MB(float64(s1.HWM)), "", nil)
	r.Add(sc, "scheduler CPU over window (% of one core)", fmt.Sprintf("%.2f %%", cpu), "≤ 2 %", bench.Le(cpu, 2))
	r.Add(sc, "fire lateness p50 (interpolated)", bench.Ms(p50), "", nil)
	r.Add(sc, "fire lateness p99 (interpolated; bucket ≤)", bench.Ms(p99)+" (≤ "+bench.Ms(p99b)+")", "≤ 5 ms", bench.Le(p99, 0.005))
	r.Add(sc, "fire lateness max (bucket upper bound)", "≤ "+bench.Ms(maxB), "", nil)
	r.Add(sc, "fire lateness mean", bench.Ms(h.Sum/math.Max(h.Count, 1)), "", nil)
	if o.workflows > 0 {
		const name = "elasticjob_workflow_fire_lateness_seconds"
		w := m1.Histogram(name).Minus(m0.Histogram(name))
		if w.Count == 0 {
			r.Add(sc, "workflow fires observed", fmt.Sprintf("none (%s not exported)", name), "", nil)
		} else {
			wp50, _ := w.Quantile(.5)
			wp99, wp99b := w.Quantile(.99)
			_, wmax := w.MaxBound()
			r.Add(sc, "workflow fires observed (rate)", fmt.Sprintf("%.0f (%.1f/s)", w.Count, w.Count/win), fmt.Sprintf("≈ %.1f/s", float64(o.workflows)/10), nil)
			r.Add(sc, "workflow fire lateness (instant → run committed) p50 / p99 / max", bench.Ms(wp50)+" / "+bench.Ms(wp99)+" (≤ "+bench.Ms(wp99b)+") / ≤ "+bench.Ms(wmax), "", nil)
		}
	}

	// Restart on the 100k-job data directory.
	bench.Logf("restarting the scheduler on the %d-job data directory", ok)
	p.Stop()
	p2, err := bench.StartScheduler(o.BinDir, dir, "--mesos-url", closedMesos, "--allow-file-app-urls=true")
	if err != nil {
		return err
	}
	p = p2
	health, err := p.WaitHealthy(120 * time.Second)
	if err != nil {
		return err
	}
	var firstFire time.Duration
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if ms, err := p.API.Scrape(); err == nil && ms["elasticjob_fire_lateness_seconds_count"] > 0 {
			firstFire = time.Since(p.Started)
			break
		}
		if err := bench.SleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	r.Add("restart", "restart on 100k jobs: until /healthz answers", fmt.Sprintf("%.2f s", health.Seconds()), "", nil)
	if firstFire == 0 {
		r.Add("restart", "restart on 100k jobs: until first fire", "none within 60 s", "", nil)
	} else {
		r.Add("restart", "restart on 100k jobs: until first fire observed", fmt.Sprintf("%.2f s", firstFire.Seconds()), "", nil)
	}
	if m, err := bench.ReadMem(p.PID()); err == nil {
		r.Add("restart", "restarted scheduler VmRSS / VmHWM", bench.MB(float64(m.RSS))+" / "+bench.MB(float64(m.HWM)), "", nil)
	}
	return nil
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
	withProducer bool // measure the producer after the registration
}

// registerWorkflows registers n one-node workflows beside the jobs, each
// with a cron firing every 10 s (workflow i at second i%10 of each ten):
// n/10 fires a second. A cron run of a workflow begins at once and never
// ends (nothing launches), so the later fires queue: misfire=true makes a
// run for every fire (up to the engine's 1,000 queued a workflow), each
// one observed.
func registerWorkflows(p *bench.Scheduler, n int) error {
	if n <= 0 {
		return nil
	}
	bench.Logf("registering %d workflows with crons every 10 s", n)
	if err := p.API.PostJSON("/api/job/register", `{"jobName":"wf_node","appName":"bench_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return err
	}
	for i := range n {
		body := fmt.Sprintf(`{"name":"wf-%04d","cron":"%d/10 * * * * ?","misfire":true,"nodes":[{"id":"n","job":"wf_node"}]}`, i, i%10)
		if err := p.API.PostJSON("/api/workflow", body); err != nil {
			return fmt.Errorf("workflow %d: %w", i, err)
		}
	}
	return nil
}
