package multicluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// RunLaunch is clusters-launch: for each cluster count n, n simulated
// Mesos clusters (a bin/mesos-local each, -mc-agents split evenly between
// them, so that every run has the same agents), one scheduler on all of
// them, -mc-jobs jobs naming no cluster, and its launches over a window.
// One cluster is reached by mesos_url, as a deployment of one cluster is;
// more by clusters_file. The jobs fire every -mc-period seconds, more
// than the scheduler launches on this machine, so the window's rate is
// its ceiling with that many clusters. A count named more than once
// (-mc-clusters 1,2,1,2: alternated on a shared machine) is run each time
// and compared by its mean.
func RunLaunch(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	o := options{env, opt}
	rates, costs := map[int][]float64{}, map[int][]float64{} // launches/s, scheduler CPU seconds per launch
	var firstErr error
	for _, n := range o.Counts {
		if ctx.Err() != nil {
			break
		}
		rate, cost, err := launchRun(ctx, o, r, n)
		if err != nil {
			bench.Logf("!!! clusters-launch/%d: %v", n, err)
			r.Note(fmt.Sprintf("clusters-launch with %d clusters could not complete: %v", n, bench.FirstLine(err.Error())))
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		rates[n] = append(rates[n], rate)
		if cost > 0 {
			costs[n] = append(costs[n], cost)
		}
	}
	if one := mean(rates[1]); one > 0 {
		done := map[int]bool{1: true}
		for _, n := range o.Counts {
			if done[n] || len(rates[n]) == 0 {
				continue
			}
			done[n] = true
			ratio := mean(rates[n]) / one
			r.Add("clusters-launch", fmt.Sprintf("launches/s with %d clusters × with 1 (means of %d and %d runs)", n, len(rates[n]), len(rates[1])),
				fmt.Sprintf("%.2f × (%.0f against %.0f)", ratio, mean(rates[n]), one), "≥ 0.90 × (a second cluster costs ≤ 10 %)", bench.Ge(ratio, 0.9))
			if c1, cn := mean(costs[1]), mean(costs[n]); c1 > 0 && cn > 0 {
				// the scheduler's own CPU per launch: what the rate would be
				// with the cores to itself, less bent by a shared machine
				r.Add("clusters-launch", fmt.Sprintf("scheduler CPU per launch with %d clusters × with 1", n),
					fmt.Sprintf("%.2f × (%s against %s)", cn/c1, bench.Ms(cn), bench.Ms(c1)), "≤ 1.10 ×", bench.Le(cn/c1, 1.1))
			}
		}
	}
	return firstErr
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// launchRun is one cluster count's run; it returns the window's launches/s
// and the scheduler's CPU seconds per launch.
func launchRun(ctx context.Context, o options, r *bench.Report, n int) (float64, float64, error) {
	sc := fmt.Sprintf("clusters-launch/%d", n)
	dir, cleanup, err := bench.TempDir(o.Env, fmt.Sprintf("clusters-%d", n))
	if err != nil {
		return 0, 0, err
	}
	defer cleanup()
	var mls []*bench.MesosLocal
	defer func() {
		for _, ml := range mls {
			ml.Stop()
		}
	}()
	var list strings.Builder
	list.WriteString("clusters:\n")
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("m%d", i+1))
		if err := os.MkdirAll(d, 0o750); err != nil {
			return 0, 0, err
		}
		ml, err := bench.StartMesosLocal(o.BinDir, d, "--sim-agents", fmt.Sprint(o.Agents/n), "--sim-agent-cpus", "8",
			"--sim-agent-mem-mb", "32768", "--sim-task-duration", "2s-5s")
		if err != nil {
			return 0, 0, err
		}
		mls = append(mls, ml)
		fmt.Fprintf(&list, "  - {name: m%d, engine: mesos, mesos_url: %q}\n", i+1, ml.URL)
	}
	schedDir := filepath.Join(dir, "sched")
	if err := os.MkdirAll(schedDir, 0o750); err != nil {
		return 0, 0, err
	}
	args := []string{"--allow-file-app-urls=true"}
	if n == 1 {
		args = append(args, "--mesos-url", mls[0].URL)
	} else {
		path := filepath.Join(dir, "clusters.yaml")
		if err := os.WriteFile(path, []byte(list.String()), 0o600); err != nil {
			return 0, 0, err
		}
		args = append(args, "--clusters-file", path)
	}
	p, err := bench.StartScheduler(o.BinDir, schedDir, args...)
	if err != nil {
		return 0, 0, err
	}
	defer p.Stop()
	if err := awaitLeader(p); err != nil {
		return 0, 0, err
	}
	for a := range launchApps {
		body := fmt.Sprintf(`{"appName":"mc_app_%d","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, a)
		if err := p.API.PostJSON("/api/app", body); err != nil {
			return 0, 0, err
		}
	}
	bench.Logf("%s: %d clusters of %d simulated agents, registering %d jobs (fires every %d s)", sc, n, o.Agents/n, o.Jobs, o.Period)
	rctx, cancel := context.WithTimeout(ctx, o.RegisterBy)
	res := bench.RegisterJobs(rctx, p.API, o.Jobs, o.Workers, func(i int) string { return launchJob(i, o.Period) })
	cancel()
	if ctx.Err() != nil {
		return 0, 0, ctx.Err()
	}
	if res.OK == 0 {
		return 0, 0, fmt.Errorf("no job registered: %v", res.FirstErr)
	}
	if err := bench.SleepCtx(ctx, o.Warmup); err != nil {
		return 0, 0, err
	}
	load0 := bench.Loadavg()
	m0, at0, _, err := p.API.ScrapeAt()
	if err != nil {
		return 0, 0, err
	}
	s0, err := bench.ReadProc(p.PID())
	if err != nil {
		return 0, 0, err
	}
	ml0 := mesosCPU(mls)
	bench.Logf("%s: observing %s (load average %s)", sc, o.Window, load0)
	if err := bench.SleepCtx(ctx, o.Window); err != nil {
		return 0, 0, err
	}
	m1, at1, _, err := p.API.ScrapeAt()
	if err != nil {
		return 0, 0, err
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return 0, 0, err
	}
	ml1 := mesosCPU(mls)
	win := at1.Sub(at0).Seconds()
	launched := m1.Sum("elasticjob_tasks_launched_total") - m0.Sum("elasticjob_tasks_launched_total")
	rate := launched / win
	cpu := s1.CPU - s0.CPU
	perLaunch := "-"
	if launched > 0 {
		perLaunch = bench.Ms(cpu / launched)
	}
	var spread []string
	if n > 1 {
		for i := range n {
			spread = append(spread, fmt.Sprintf("m%d %.0f", i+1, m1.Sum("elasticjob_cluster_running_tasks", fmt.Sprintf(`cluster="m%d"`, i+1))))
		}
	}
	late := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	l99, _ := late.Quantile(0.99)
	r.Add(sc, "jobs registered; launches/s (window mean)", fmt.Sprintf("%d; %.0f over %.0f s", res.OK, rate, win), "", nil)
	r.Add(sc, "scheduler CPU per launch; % of one core; mesos-locals' % of one core",
		fmt.Sprintf("%s; %.0f %%; %.0f %%", perLaunch, 100*cpu/win, 100*(ml1-ml0)/win), "", nil)
	ended := m1.Sum("elasticjob_tasks_ended_total") - m0.Sum("elasticjob_tasks_ended_total")
	// tasks run 2-5 s: about 3.5 s of launches are running at any time, and
	// more when the scheduler hears of their ends late
	r.Add(sc, "tasks ended/s in the window; running at its end (≈ 3.5 s of launches when ends are heard on time)",
		fmt.Sprintf("%.0f; %.0f", ended/win, m1.Sum("elasticjob_running_tasks")), "", nil)
	if len(spread) > 0 {
		r.Add(sc, "running tasks per cluster at the window's end", strings.Join(spread, ", "), "", nil)
	}
	r.Add(sc, "fire lateness p99 (instant → ready entry); ready queue at end (jobs)",
		fmt.Sprintf("%s; %.0f", bench.Ms(l99), m1.Sum("elasticjob_ready_queue_jobs")), "", nil)
	r.Add(sc, "load average at the window's start; end", load0+"; "+bench.Loadavg(), "", nil)
	if launched == 0 {
		return rate, 0, nil
	}
	return rate, cpu / launched, nil
}

// launchApps is how many apps the jobs are spread over (one executor per
// app and agent).
const launchApps = 10

// launchJob is job i: 1 + i%10 shards (5.5 on average), fired every period
// seconds from second i%period, on app i%launchApps.
func launchJob(i, period int) string {
	return fmt.Sprintf(`{"jobName":"mc-%06d","appName":"mc_app_%d","jobExecutionType":"TRANSIENT","cron":"%d/%d * * * * ?","shardingTotalCount":%d,"cpuCount":0.1,"memoryMB":64}`,
		i, i%launchApps, i%period, period, 1+i%10)
}

// mesosCPU is the CPU seconds the mesos-locals used so far.
func mesosCPU(mls []*bench.MesosLocal) float64 {
	var t float64
	for _, ml := range mls {
		if s, err := bench.ReadProc(ml.PID()); err == nil {
			t += s.CPU
		}
	}
	return t
}

// awaitLeader waits until the scheduler answers and says it leads.
func awaitLeader(p *bench.Scheduler) error {
	if _, err := p.WaitHealthy(60 * time.Second); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m, err := p.API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler did not become leader within 60 s; log tail:\n%s", bench.Tail(p.LogPath, 2000))
		}
	}
}
