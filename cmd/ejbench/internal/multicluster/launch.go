package multicluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// RunLaunch is clusters-launch: for each run's clusters (a Mix), that
// many simulated Mesos clusters (a bin/mesos-local each) and Kubernetes
// clusters of kwok nodes (kube.go), -mc-agents split evenly between them
// (a Kubernetes cluster's share as kwok nodes of the agents' size),
// so that every run has the same capacity; one scheduler on all of them,
// -mc-jobs jobs naming no cluster, and its launches over a window. One
// cluster is reached by mesos_url or kube_config, as a deployment of one
// cluster is; more by clusters_file. The jobs fire every -mc-period
// seconds, more than the scheduler launches on this machine, so the
// window's rate is its ceiling with those clusters. A run named more than
// once (-mc-clusters 1,1+1k,1,1+1k: alternated on a shared machine) is run
// each time and compared by its mean, each against one Mesos cluster's
// (the first run's when 1 is not among them).
func RunLaunch(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	o := options{env, opt}
	if o.Apart.SchedCore {
		own, rest, err := bench.SplitCPUs()
		if err != nil {
			return fmt.Errorf("-mc-sched-core: %w", err)
		}
		r.Note(fmt.Sprintf("clusters-launch: each scheduler ran on CPU %s alone, everything else on CPUs %s", own, rest))
		// Pinned first, so that every process the runs start (children inherit the group)
		// is on the other CPUs; the scheduler is moved to its own as it starts.
		pin, err := bench.PinCPUs(os.Getpid(), "rest", rest)
		if err != nil {
			return fmt.Errorf("-mc-sched-core: %w", err)
		}
		defer func() { _ = pin.Release() }()
	}
	kwokBin := ""
	if slices.ContainsFunc(o.Counts, func(m Mix) bool { return m.Kube > 0 }) {
		bin, release, err := kubeSetup(ctx, o)
		if err != nil {
			return err
		}
		defer release()
		kwokBin = bin
	}
	sides := []side{{"", o.BinDir}}
	if o.Before != "" {
		sides = []side{{"before", o.Before}, {"after", o.BinDir}}
	}
	// launches/s, scheduler CPU seconds per launch, tasks ended/s
	rates, costs, ends := map[runKey][]float64{}, map[runKey][]float64{}, map[runKey][]float64{}
	var firstErr error
	for _, m := range o.Counts {
		for _, sd := range sides {
			if ctx.Err() != nil {
				break
			}
			k := runKey{sd.name, m}
			res, err := launchRun(ctx, o, r, k, sd.bin, kwokBin)
			if err != nil {
				bench.Logf("!!! %s: %v", k, err)
				r.Note(fmt.Sprintf("%s could not complete: %v", k, bench.FirstLine(err.Error())))
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			rates[k], ends[k] = append(rates[k], res.rate), append(ends[k], res.ended)
			if res.cost > 0 {
				costs[k] = append(costs[k], res.cost)
			}
		}
	}
	base := Mix{Mesos: 1}
	if !slices.Contains(o.Counts, base) {
		base = o.Counts[0]
	}
	for _, sd := range sides {
		compare(r, sd.name, rates, costs, ends, o.Counts, base)
	}
	if o.Before == "" {
		return firstErr
	}
	done := map[Mix]bool{}
	for _, m := range o.Counts {
		b, a := runKey{"before", m}, runKey{"after", m}
		if done[m] || len(rates[b]) == 0 || len(rates[a]) == 0 {
			continue
		}
		done[m] = true
		r.Add("clusters-launch", fmt.Sprintf("launches/s with clusters %s, after × before (means of %d and %d runs)", m, len(rates[a]), len(rates[b])),
			fmt.Sprintf("%.2f × (%.0f against %.0f)", mean(rates[a])/mean(rates[b]), mean(rates[a]), mean(rates[b])), "", nil)
		r.Add("clusters-launch", fmt.Sprintf("tasks ended/s with clusters %s, after × before", m),
			fmt.Sprintf("%.2f × (%.0f against %.0f)", mean(ends[a])/mean(ends[b]), mean(ends[a]), mean(ends[b])), "", nil)
	}
	return firstErr
}

// side is the scheduler a run starts: -bin's (name "", or "after" beside -mc-before's).
type side struct{ name, bin string }

// runKey is a run's side and clusters.
type runKey struct {
	side string
	m    Mix
}

// String is the run's scenario name: clusters-launch/[side/]mix.
func (k runKey) String() string {
	if k.side == "" {
		return "clusters-launch/" + k.m.String()
	}
	return "clusters-launch/" + k.side + "/" + k.m.String()
}

// compare adds each mix's means on one side against base's on that side.
func compare(r *bench.Report, sideName string, rates, costs, ends map[runKey][]float64, counts []Mix, base Mix) {
	one := mean(rates[runKey{sideName, base}])
	if one == 0 {
		return
	}
	sc := strings.TrimSuffix("clusters-launch/"+sideName, "/")
	done := map[Mix]bool{base: true}
	for _, m := range counts {
		k := runKey{sideName, m}
		if done[m] || len(rates[k]) == 0 {
			continue
		}
		done[m] = true
		ratio := mean(rates[k]) / one
		r.Add(sc, fmt.Sprintf("launches/s with clusters %s × with %s (means of %d and %d runs)", m, base, len(rates[k]), len(rates[runKey{sideName, base}])),
			fmt.Sprintf("%.2f × (%.0f against %.0f)", ratio, mean(rates[k]), one), "≥ 0.90 × (a second cluster costs ≤ 10 %)", bench.Ge(ratio, 0.9))
		if e1, en := mean(ends[runKey{sideName, base}]), mean(ends[k]); e1 > 0 {
			r.Add(sc, fmt.Sprintf("tasks ended/s with clusters %s × with %s (the same rate without the rounds' step)", m, base),
				fmt.Sprintf("%.2f × (%.0f against %.0f)", en/e1, en, e1), "≥ 0.90 ×", bench.Ge(en/e1, 0.9))
		}
		if c1, cn := mean(costs[runKey{sideName, base}]), mean(costs[k]); c1 > 0 && cn > 0 {
			// the scheduler's own CPU per launch: what the rate would be
			// with the cores to itself, less bent by a shared machine
			r.Add(sc, fmt.Sprintf("scheduler CPU per launch with clusters %s × with %s", m, base),
				fmt.Sprintf("%.2f × (%s against %s)", cn/c1, bench.Ms(cn), bench.Ms(c1)), "≤ 1.10 ×", bench.Le(cn/c1, 1.1))
		}
	}
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

// profSeq numbers the runs' kept profiles.
var profSeq int

// runResult is a run's figures: launches/s, the scheduler's CPU seconds per launch, and
// tasks ended/s. Launches come in rounds (at this overload, a round of thousands of tasks
// every several seconds), so a window's launches/s moves by a round's share of it with
// where the window falls; the ends, handled a batch at a time several times a second,
// follow the same rate over a window without that step.
type runResult struct{ rate, cost, ended float64 }

// launchRun is one run's. The Mesos clusters are m1, m2, …,
// the Kubernetes ones k1, k2, … (the first named is the home cluster).
func launchRun(ctx context.Context, o options, r *bench.Report, k runKey, bin, kwokBin string) (runResult, error) {
	sc, m := k.String(), k.m
	n := m.Total()
	per := o.Agents / n
	dir, cleanup, err := bench.TempDir(o.Env, "clusters-"+m.String())
	if err != nil {
		return runResult{}, err
	}
	defer cleanup()
	var mls []*bench.MesosLocal
	var kcs []*kubeCluster
	var kubeDirs []string // -mc-kube-dir's, removed once their clusters have stopped
	defer func() {
		for _, ml := range mls {
			ml.Stop()
		}
		for _, k := range kcs {
			k.stop()
		}
		for _, d := range kubeDirs {
			_ = os.RemoveAll(d)
		}
	}()
	var list strings.Builder
	list.WriteString("clusters:\n")
	var names []string
	for i := range m.Mesos {
		name := fmt.Sprintf("m%d", i+1)
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o750); err != nil {
			return runResult{}, err
		}
		ml, err := bench.StartMesosLocal(o.BinDir, d, "--sim-agents", fmt.Sprint(per), "--sim-agent-cpus", "8",
			"--sim-agent-mem-mb", "32768", "--sim-task-duration", "2s-5s")
		if err != nil {
			return runResult{}, err
		}
		mls = append(mls, ml)
		names = append(names, name)
		fmt.Fprintf(&list, "  - {name: %s, engine: mesos, mesos_url: %q}\n", name, ml.URL)
	}
	for i := range m.Kube {
		name := fmt.Sprintf("k%d", i+1)
		d := filepath.Join(dir, name)
		if o.Apart.KubeDir != "" {
			if d, err = os.MkdirTemp(o.Apart.KubeDir, "ej-bench-"+name+"-"); err != nil {
				return runResult{}, fmt.Errorf("-mc-kube-dir: %w", err)
			}
			kubeDirs = append(kubeDirs, d)
		}
		if err := os.MkdirAll(d, 0o750); err != nil {
			return runResult{}, err
		}
		k, err := startKube(ctx, d, kwokBin, name, per)
		if err != nil {
			return runResult{}, fmt.Errorf("Kubernetes cluster %s: %w", name, err)
		}
		kcs = append(kcs, k)
		names = append(names, name)
		fmt.Fprintf(&list, "  - {name: %s, engine: kubernetes, kube_config: %q, kube_namespace: %s}\n", name, k.kubeconfig, kubeNS)
	}
	schedDir := filepath.Join(dir, "sched")
	if err := os.MkdirAll(schedDir, 0o750); err != nil {
		return runResult{}, err
	}
	args := []string{"--allow-file-app-urls=true"}
	if len(kcs) > 0 {
		args = append(args, "--kube-executor-image", "localhost/elasticjob-executor:bench",
			"--kube-api-qps", fmt.Sprint(o.KubeQPS), "--kube-api-burst", fmt.Sprint(o.KubeBurst))
	}
	switch {
	case n == 1 && len(mls) == 1:
		args = append(args, "--mesos-url", mls[0].URL)
	case n == 1:
		args = append(args, "--kube-config", kcs[0].kubeconfig, "--kube-namespace", kubeNS)
	default:
		path := filepath.Join(dir, "clusters.yaml")
		if err := os.WriteFile(path, []byte(list.String()), 0o600); err != nil {
			return runResult{}, err
		}
		args = append(args, "--clusters-file", path)
	}
	if o.Profile {
		args = append(args, "--debug-pprof", "true")
	}
	p, err := bench.StartScheduler(bin, schedDir, args...)
	if err != nil {
		return runResult{}, err
	}
	var cpuCap *bench.CPUCap
	var pin *bench.CPUPin
	defer func() { p.Stop(); _ = cpuCap.Release(); _ = pin.Release() }()
	if o.Apart.SchedCore {
		own, _, _ := bench.SplitCPUs()
		if pin, err = bench.PinCPUs(p.PID(), fmt.Sprintf("sched-%d", p.PID()), own); err != nil {
			return runResult{}, fmt.Errorf("-mc-sched-core: %w", err)
		}
	}
	if o.Apart.SchedCPUs > 0 {
		if cpuCap, err = bench.CapCPU(p.PID(), o.Apart.SchedCPUs); err != nil {
			return runResult{}, fmt.Errorf("-mc-sched-cpus %g: %w", o.Apart.SchedCPUs, err)
		}
	}
	if err := awaitLeader(p); err != nil {
		return runResult{}, err
	}
	if err := awaitClusters(ctx, p, n, per); err != nil {
		return runResult{}, err
	}
	for a := range launchApps {
		body := fmt.Sprintf(`{"appName":"mc_app_%d","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, a)
		if err := p.API.PostJSON("/api/app", body); err != nil {
			return runResult{}, err
		}
	}
	bench.Logf("%s: %d Mesos and %d Kubernetes clusters of %d simulated agents each, registering %d jobs (fires every %d s)", sc, m.Mesos, m.Kube, per, o.Jobs, o.Period)
	rctx, cancel := context.WithTimeout(ctx, o.RegisterBy)
	res := bench.RegisterJobs(rctx, p.API, o.Jobs, o.Workers, func(i int) string { return launchJob(i, o.Period) })
	cancel()
	if ctx.Err() != nil {
		return runResult{}, ctx.Err()
	}
	if refused := res.Refusals(); refused != "" {
		bench.Logf("%s: registrations answered %s; %d sent again after a 503", sc, refused, res.Retried)
		r.Note(fmt.Sprintf("%s: registrations answered %s; %d sent again after a 503", sc, refused, res.Retried))
	}
	if res.OK == 0 {
		return runResult{}, fmt.Errorf("no job registered: %v", res.FirstErr)
	}
	if err := bench.SleepCtx(ctx, o.Warmup); err != nil {
		return runResult{}, err
	}
	load0 := bench.Loadavg()
	m0, at0, _, err := p.API.ScrapeAt()
	if err != nil {
		return runResult{}, err
	}
	s0, err := bench.ReadProc(p.PID())
	if err != nil {
		return runResult{}, err
	}
	ml0, k0 := mesosCPU(mls), kubeStats(ctx, kcs)
	var runnable0, throttled0 int64
	var held0 float64
	if cpuCap != nil {
		runnable0, throttled0 = cpuCap.Periods()
		held0 = cpuCap.ThrottledTime()
	}
	busy0, delay0 := bench.MachineBusy(), bench.RunDelay(p.PID())
	bench.Logf("%s: observing %s (load average %s)", sc, o.Window, load0)
	var prof string
	profDone, blockDone := make(chan error, 1), make(chan error, 1)
	if o.Profile {
		profSeq++
		prof = filepath.Join(os.TempDir(), fmt.Sprintf("ej-bench-%s-%d.cpu.pprof", strings.ReplaceAll(sc, "/", "-"), profSeq))
		go func() { profDone <- bench.FetchCPUProfile(p.Port, o.Window-time.Second, prof) }()
		go func() { // the wall clock the goroutines spend blocked over the same span
			block := strings.TrimSuffix(prof, ".cpu.pprof") + ".block.pprof"
			blockDone <- bench.FetchProfile(p.Port, fmt.Sprintf("block?seconds=%d", max(1, int((o.Window-time.Second).Seconds()))), block)
		}()
	}
	if err := bench.SleepCtx(ctx, o.Window); err != nil {
		return runResult{}, err
	}
	if o.Profile {
		if err := <-blockDone; err != nil {
			r.Note(sc + ": scheduler blocking profile: " + err.Error())
		}
		if err := <-profDone; err != nil {
			r.Note(sc + ": scheduler CPU profile: " + err.Error())
		} else {
			bench.ProfileTop(bin, r, sc, "scheduler", prof, "over the window ("+prof+")")
		}
	}
	m1, at1, _, err := p.API.ScrapeAt()
	if err != nil {
		return runResult{}, err
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return runResult{}, err
	}
	ml1, k1 := mesosCPU(mls), kubeStats(ctx, kcs)
	busy1, delay1 := bench.MachineBusy(), bench.RunDelay(p.PID())
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
		for _, name := range names {
			spread = append(spread, fmt.Sprintf("%s %.0f", name, m1.Sum("elasticjob_cluster_running_tasks", fmt.Sprintf(`cluster="%s"`, name))))
		}
	}
	late := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	l99, _ := late.Quantile(0.99)
	r.Add(sc, "jobs registered; launches/s (window mean)", fmt.Sprintf("%d; %.0f over %.0f s", res.OK, rate, win), "", nil)
	r.Add(sc, "scheduler CPU per launch; % of one core; mesos-locals' % of one core",
		fmt.Sprintf("%s; %.0f %%; %.0f %%", perLaunch, 100*cpu/win, 100*(ml1-ml0)/win), "", nil)
	if cpuCap != nil {
		runnable, throttled := cpuCap.Periods()
		r.Add(sc, "scheduler held to (CPUs); its 100 ms periods that ran out of that quota; time held back by it",
			fmt.Sprintf("%g; %.0f %%; %.0f %%", cpuCap.CPUs, 100*float64(throttled-throttled0)/float64(max(1, runnable-runnable0)),
				100*(cpuCap.ThrottledTime()-held0)/win), "", nil)
	}
	// Whether the scheduler's time off its core is its own (blocked) or the machine's:
	// its threads' runqueue wait (quota throttling included) against every core's use.
	r.Add(sc, "machine's cores busy (% of all); the scheduler's threads' runqueue wait (thread-s per s, its quota's included)",
		fmt.Sprintf("%.0f %% of %d; %.2f", 100*(busy1-busy0)/win/float64(runtime.NumCPU()), runtime.NumCPU(), (delay1-delay0)/win), "", nil)
	for i := range kcs {
		a, b := k0[i], k1[i]
		r.Add(sc, fmt.Sprintf("%s: pods created/s; API requests/s, the scheduler's / all; its processes' %% of one core (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)", names[len(mls)+i]),
			fmt.Sprintf("%.1f; %.0f / %.0f; %.0f %%", (b.created-a.created)/win, (b.sched-a.sched)/win, (b.requests-a.requests)/win, 100*(b.cpu-a.cpu)/win), "", nil)
	}
	ended := m1.Sum("elasticjob_tasks_ended_total") - m0.Sum("elasticjob_tasks_ended_total")
	// tasks run 2-5 s: about 3.5 s of launches are running at any time, and
	// more when the scheduler hears of their ends late
	r.Add(sc, "tasks ended/s in the window; running at its end (≈ 3.5 s of launches when ends are heard on time)",
		fmt.Sprintf("%.0f; %.0f", ended/win, m1.Sum("elasticjob_running_tasks")), "", nil)
	if len(spread) > 0 {
		r.Add(sc, "running tasks per cluster at the window's end", strings.Join(spread, ", "), "", nil)
	}
	roundStats(r, sc, m0, m1, win)
	r.Add(sc, "fire lateness p99 (instant → ready entry); ready queue at end (jobs)",
		fmt.Sprintf("%s; %.0f", bench.Ms(l99), m1.Sum("elasticjob_ready_queue_jobs")), "", nil)
	r.Add(sc, "load average at the window's start; end", load0+"; "+bench.Loadavg(), "", nil)
	out := runResult{rate: rate, ended: ended / win}
	if launched > 0 {
		out.cost = cpu / launched
	}
	return out, nil
}

// roundStats reports the window's launch rounds (elasticjob_launch_round_*) and the
// scheduler's garbage collection, from the scrapes at its start (a) and end (b).
func roundStats(r *bench.Report, sc string, a, b promtext.Set, win float64) {
	const tasks = "elasticjob_launch_round_tasks"
	var n, t float64
	var by []string
	for c := 0; c <= 8; c++ {
		l := fmt.Sprintf(`clusters="%d"`, c)
		h := b.Histogram(tasks, l).Minus(a.Histogram(tasks, l))
		if h.Count == 0 {
			continue
		}
		n, t = n+h.Count, t+h.Sum
		by = append(by, fmt.Sprintf("%d: %.1f/s of %.0f", c, h.Count/win, h.Sum/h.Count))
	}
	if n == 0 {
		return
	}
	r.Add(sc, "launch rounds/s; tasks per round; by the clusters a round could place on (rounds/s of tasks per round)",
		fmt.Sprintf("%.1f; %.0f; %s", n/win, t/n, strings.Join(by, ", ")), "", nil)
	var phases []string
	var loop float64
	for _, ph := range []string{"view", "decide", "commit", "accept", "other"} {
		l := fmt.Sprintf(`phase="%s"`, ph)
		h := b.Histogram("elasticjob_launch_round_seconds", l).Minus(a.Histogram("elasticjob_launch_round_seconds", l))
		loop += h.Sum
		phases = append(phases, fmt.Sprintf("%s %s", ph, bench.Ms(h.Sum/max(1, h.Count))))
	}
	r.Add(sc, "a round's phases on the loop (means); rounds' share of the window",
		fmt.Sprintf("%s; %.0f %%", strings.Join(phases, ", "), 100*loop/win), "", nil)
	bu := b.Histogram("elasticjob_status_batch_updates").Minus(a.Histogram("elasticjob_status_batch_updates"))
	bs := b.Histogram("elasticjob_status_batch_seconds").Minus(a.Histogram("elasticjob_status_batch_seconds"))
	if bu.Count > 0 {
		r.Add(sc, "status update batches/s; updates per batch; a batch's time on the loop (mean); batches' share of the window",
			fmt.Sprintf("%.1f; %.0f; %s; %.0f %%", bu.Count/win, bu.Sum/bu.Count, bench.Ms(bs.Sum/max(1, bs.Count)), 100*bs.Sum/win), "", nil)
	}
	gcs := b.Sum("go_gc_duration_seconds_count") - a.Sum("go_gc_duration_seconds_count")
	pause := b.Sum("go_gc_duration_seconds_sum") - a.Sum("go_gc_duration_seconds_sum")
	alloc := b.Sum("go_memstats_alloc_bytes_total") - a.Sum("go_memstats_alloc_bytes_total")
	r.Add(sc, "running tasks in the last round's view; GC cycles/s; GC pauses' share; allocated MB/s",
		fmt.Sprintf("%.0f; %.1f; %.2f %%; %.0f", b.Sum("elasticjob_launch_round_running_tasks"), gcs/win, 100*pause/win, alloc/win/1e6), "", nil)
}

// launchApps is how many apps the jobs are spread over (one executor per
// app and agent).
const launchApps = 10

// launchJob is job i: 1 + i%10 shards (5.5 on average), fired every period
// seconds from second i%period, on app i%launchApps. Its parameter is the
// run time of its pods on kwok, 2–5 s (the simulated agents draw their
// tasks' from the same range).
func launchJob(i, period int) string {
	return fmt.Sprintf(`{"jobName":"mc-%06d","appName":"mc_app_%d","jobExecutionType":"TRANSIENT","cron":"%d/%d * * * * ?","shardingTotalCount":%d,"cpuCount":0.1,"memoryMB":64,"jobParameter":"run=%ds exit=0"}`,
		i, i%launchApps, i%period, period, 1+i%10, 2+i%4)
}

// kubeStat is a Kubernetes cluster's counts at one instant.
type kubeStat struct{ created, sched, requests, cpu float64 }

func kubeStats(ctx context.Context, kcs []*kubeCluster) []kubeStat {
	out := make([]kubeStat, len(kcs))
	for i, k := range kcs {
		out[i].created, out[i].sched, out[i].requests = k.apiCounts(ctx)
		out[i].cpu = k.cpu()
	}
	return out
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
