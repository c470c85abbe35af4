package clustersim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// simSlice is how often the launch counter is read during the window: the
// lowest rate over a slice is the "sustained" figure.
const simSlice = 30 * time.Second

// simSample is one reading taken during the window.
type simSample struct {
	at       time.Time
	launched float64
}

// measure observes the window: scheduler and mesos-local CPU from /proc,
// the scheduler's VmRSS every second, its /metrics at both ends and every
// simSlice, ZooKeeper's transaction counter at both ends.
func (s *simRun) measure(ctx context.Context) error {
	o, p := s.o, s.p
	m0, at0, _, err := p.API.ScrapeAt()
	if err != nil {
		return err
	}
	s0, err := bench.ReadProc(p.PID())
	if err != nil {
		return err
	}
	ml0, err := bench.ReadProc(s.ml.PID())
	if err != nil {
		return err
	}
	var zk0 zkStat
	var sb0 promtext.Set
	if s.sb != nil {
		if sb0, err = s.sb.API.Scrape(); err != nil {
			s.r.Note(s.sc + ": the standby's /metrics: " + err.Error())
		}
	}
	if s.zk != "" {
		if zk0, err = readZKStat(s.zk); err != nil {
			s.r.Note(s.sc + ": ZooKeeper srvr: " + err.Error())
		}
	}
	bench.Logf("%s: observing %s (load average %s)", s.sc, o.simWindow, bench.Loadavg())
	samples := []simSample{{at0, m0.Sum("elasticjob_tasks_launched_total")}}
	var slowest time.Duration // the largest uncertainty of a reading's time
	profDone := make(chan struct{})
	if o.simProfile { // the scheduler's CPU over the window, but for its last seconds
		go func() { defer close(profDone); s.profileSched(max(time.Second, o.simWindow-5*time.Second)) }()
	} else {
		close(profDone)
	}
	defer func() { <-profDone }()
	var rssMax bench.Mem
	nextSlice := time.Now().Add(simSlice)
	for end := time.Now().Add(o.simWindow); time.Now().Before(end); {
		if m, err := bench.ReadMem(p.PID()); err == nil && m.RSS > rssMax.RSS {
			rssMax = m
		}
		if now := time.Now(); !now.Before(nextSlice) && end.Sub(now) > simSlice/2 {
			if m, at, half, err := p.API.ScrapeAt(); err == nil {
				slowest = max(slowest, half)
				samples = append(samples, simSample{at, m.Sum("elasticjob_tasks_launched_total")})
				bench.Logf("%s: %.0f launches/s over the last %s, VmRSS %s (read within ±%s)", s.sc,
					rateOf(samples[len(samples)-2:]), simSlice, bench.MB(float64(rssMax.RSS)), half.Round(time.Millisecond))
			}
			nextSlice = nextSlice.Add(simSlice)
		}
		if err := bench.SleepCtx(ctx, min(time.Second, time.Until(end))); err != nil {
			return err
		}
	}
	s1, err := bench.ReadProc(p.PID())
	if err != nil {
		return err
	}
	ml1, err := bench.ReadProc(s.ml.PID())
	if err != nil {
		return err
	}
	var zk1 zkStat
	if s.zk != "" && zk0.zxid > 0 {
		zk1, _ = readZKStat(s.zk)
	}
	m1, at1, half1, err := p.API.ScrapeAt()
	if err != nil {
		return err
	}
	slowest = max(slowest, half1)
	if o.simProfile {
		s.heapProfile()
	}
	samples = append(samples, simSample{at1, m1.Sum("elasticjob_tasks_launched_total")})
	s.readSlack = slowest
	mm, mmErr := s.ml.Metrics()
	s.window = s1.Taken.Sub(s0.Taken).Seconds()
	if s1.RSS > rssMax.RSS {
		rssMax = s1.Mem
	}
	s.report(m0, m1, s0, s1, ml0, ml1, samples, rssMax)
	if s.zk != "" {
		s.reportLag("leader", m0, m1)
	}
	if s.sb != nil && sb0 != nil {
		if sb1, err := s.sb.API.Scrape(); err == nil {
			s.reportLag("standby", sb0, sb1)
			s.reportStandbyMem("standby", s.sb, sb1)
		}
	}
	if s.store == "etcd" {
		s.reportEtcd(m0, m1)
	}
	if mmErr != nil {
		s.r.Note(s.sc + ": " + mmErr.Error())
	} else {
		s.r.Add(s.sc, "master at end: tasks staging / starting / running; updates awaiting the scheduler's ack; events queued to it",
			fmt.Sprintf("%.0f / %.0f / %.0f; %.0f; %.0f", mm["master/tasks_staging"], mm["master/tasks_starting"], mm["master/tasks_running"],
				mm["embedded/unacknowledged_updates"], mm["embedded/queued_events"]), "", nil)
	}
	if zk1.zxid > 0 {
		s.zkTxns = float64(zk1.zxid - zk0.zxid)
		per := "n/a (no launch)"
		if s.launches > 0 {
			per = fmt.Sprintf("%.2f", s.zkTxns/s.launches)
		}
		s.r.Add(s.sc, "ZooKeeper write transactions in window (srvr zxid) / per launch",
			fmt.Sprintf("%.0f/s / %s (znodes: %d)", s.zkTxns/s.window, per, zk1.nodes), "", nil)
	}
	return nil
}

// rateOf is the launch rate between the first and last sample.
func rateOf(ss []simSample) float64 {
	a, b := ss[0], ss[len(ss)-1]
	return (b.launched - a.launched) / b.at.Sub(a.at).Seconds()
}

func (s *simRun) report(m0, m1 promtext.Set, s0, s1, ml0, ml1 bench.ProcStat, samples []simSample, rssMax bench.Mem) {
	o, sc, win := s.o, s.sc, s.window
	d := func(name string, want ...string) float64 { return m1.Sum(name, want...) - m0.Sum(name, want...) }
	launched := d("elasticjob_tasks_launched_total")
	s.launches = launched
	rate := launched / win
	var perSlice []float64
	for i := 1; i < len(samples); i++ {
		perSlice = append(perSlice, rateOf(samples[i-1:i+1]))
	}
	lowest := slices.Min(perSlice)
	hist := func(name string) promtext.Histogram { return m1.Histogram(name).Minus(m0.Histogram(name)) }
	acc, late := hist("elasticjob_ready_to_accept_seconds"), hist("elasticjob_fire_lateness_seconds")
	a50, _ := acc.Quantile(.5)
	a99, a99b := acc.Quantile(.99)
	l50, _ := late.Quantile(.5)
	l99, l99b := late.Quantile(.99)
	demand := float64(s.registered) / 60 * 5.5
	cpu := s1.CPU - s0.CPU
	mlCPU := ml1.CPU - ml0.CPU
	r := s.r
	s.noteTermLost(m0, m1)
	r.Add(sc, "setup", fmt.Sprintf("%d simulated agents × %g cpus/%g MB, tasks %s, %d jobs (1-10 shards, cron at second i%%60 of every minute, %d apps), %.0f s window",
		o.simAgents, o.simAgentCPUs, o.simAgentMemMB, o.simDuration, s.registered, o.simApps, win), "", nil)
	r.Add(sc, "offered load (fires × shards)", fmt.Sprintf("%.0f fires/s observed, ≈ %.0f shard launches/s asked for", late.Count/win, demand), "", nil)
	var goal *bool
	target := ""
	if s.store == "embedded" {
		goal, target = bench.Ge(lowest, 2000), "≥ 2,000/s"
	}
	r.Add(sc, fmt.Sprintf("launches/s: window mean; lowest %s slice", simSlice),
		fmt.Sprintf("%.0f/s; %.0f/s (%.0f launches; slice ends read within ±%s)", rate, lowest, launched, s.readSlack.Round(time.Millisecond)), target, goal)
	r.Add(sc, "tasks ended in window: finished; failed; killed", fmt.Sprintf("%.0f; %.0f; %.0f",
		d("elasticjob_tasks_ended_total", `result="finished"`), d("elasticjob_tasks_ended_total", `result="failed"`),
		d("elasticjob_tasks_ended_total", `result="killed"`)), "", nil)
	r.Add(sc, "ready → ACCEPT p50 / p99 (bucket ≤)", bench.Ms(a50)+" / "+bench.Ms(a99)+" (≤ "+bench.Ms(a99b)+")", "", nil)
	r.Add(sc, "fire lateness p50 / p99 (bucket ≤)", bench.Ms(l50)+" / "+bench.Ms(l99)+" (≤ "+bench.Ms(l99b)+")", "p99 ≤ 10 ms", bench.Le(l99, 0.010))
	r.Add(sc, "scheduler CPU per launch; % of one core", fmt.Sprintf("%s; %.0f %%", perLaunch(cpu, launched), 100*cpu/win), "", nil)
	r.Add(sc, "scheduler VmRSS max in window / VmHWM", bench.MB(float64(rssMax.RSS))+" / "+bench.MB(float64(s1.HWM)), "≤ 1 GB", bench.Le(float64(max(rssMax.RSS, s1.HWM)), 1<<30))
	// RssFile: pages of mapped files (the binary, and any database read
	// through mmap): the kernel's page cache, which holds them whether or
	// not they are mapped, and may reclaim them.
	r.Add(sc, "of the VmRSS max: mapped files (RssFile); the rest", bench.MB(float64(rssMax.File))+"; "+bench.MB(float64(rssMax.RSS-rssMax.File)), "", nil)
	// What the Go runtime holds at the window's end (the scheduler's Go
	// collector): what the RSS is made of besides the live heap.
	g := func(name string) string { return bench.MB(m1.Sum(name)) }
	r.Add(sc, "Go at end: heap in use; heap idle, not returned; stacks; next GC goal; all Go obtained (Sys)",
		g("go_memstats_heap_inuse_bytes")+"; "+bench.MB(m1.Sum("go_memstats_heap_idle_bytes")-m1.Sum("go_memstats_heap_released_bytes"))+"; "+
			g("go_memstats_stack_inuse_bytes")+"; "+g("go_memstats_next_gc_bytes")+"; "+g("go_memstats_sys_bytes"), "", nil)
	recv, decl := d("elasticjob_offers_total", `outcome="received"`), d("elasticjob_offers_total", `outcome="declined"`)
	r.Add(sc, "offers received; declined (per second)", fmt.Sprintf("%.0f/s; %.0f/s", recv/win, decl/win), "", nil)
	r.Add(sc, "ready queue at end (jobs); waiting entries by reason", fmt.Sprintf("%.0f; %s", m1.Sum("elasticjob_ready_queue_jobs"), waitingByReason(m1)), "", nil)
	r.Add(sc, "mesos-local (simulated master) CPU per launch; % of one core", fmt.Sprintf("%s; %.0f %%", perLaunch(mlCPU, launched), 100*mlCPU/win), "", nil)
	r.Add(sc, "load average at end of window", bench.Loadavg(), "", nil)
}

// perLaunch renders CPU seconds per launch ("no launch" without any).
func perLaunch(cpu, launched float64) string {
	if launched <= 0 {
		return "n/a (no launch)"
	}
	return bench.Ms(cpu / launched)
}

// waitingByReason renders elasticjob_waiting_entries{reason=…}.
func waitingByReason(m promtext.Set) string {
	var parts []string
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, `elasticjob_waiting_entries{reason="`); ok && v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimSuffix(rest, `"}`), v))
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// zkAfter measures ZooKeeper's own write rate on this machine (the
// scheduler and mesos-local are stopped by now) and relates the
// scheduler's ZooKeeper writes to it, then removes the scheduler's tree.
func (s *simRun) zkAfter(ctx context.Context) {
	bench.Logf("%s: measuring ZooKeeper's own write rate", s.sc)
	root := fmt.Sprintf("/ejbench-zkrate-%d", time.Now().UnixNano())
	zr, err := measureZKRate(ctx, s.zk, root, 5*time.Second)
	if err != nil {
		s.r.Note(s.sc + ": ZooKeeper write-rate benchmark: " + err.Error())
	} else {
		s.r.Add(s.sc, "ZooKeeper alone: 1 writer, 1 op per request", fmt.Sprintf("%.0f txns/s (%s each)", zr.seqTxnPerSec, zr.seqLatency.Round(time.Microsecond)), "", nil)
		s.r.Add(s.sc, fmt.Sprintf("ZooKeeper alone: %d writers, 1 op per request", zkRateWorkers), fmt.Sprintf("%.0f txns/s", zr.parTxnPerSec), "", nil)
		s.r.Add(s.sc, fmt.Sprintf("ZooKeeper alone: %d writers, multi of %d ops", zkRateWorkers, zkRateMultiOps), fmt.Sprintf("%.0f txns/s = %.0f ops/s", zr.multiTxns, zr.multiOps), "", nil)
		if s.zkTxns > 0 && s.window > 0 {
			s.r.Add(s.sc, "scheduler's ZooKeeper write rate vs ZooKeeper alone (parallel single ops)",
				fmt.Sprintf("%.1f %%", 100*s.zkTxns/s.window/zr.parTxnPerSec), "", nil)
		}
	}
	t := time.Now()
	if err := deleteZKNamespace(ctx, s.zk, "/"+s.zkNS); err != nil {
		s.r.Note(fmt.Sprintf("%s: the scheduler's ZooKeeper tree /%s was not removed: %v", s.sc, s.zkNS, err))
		return
	}
	bench.Logf("%s: removed /%s from ZooKeeper in %s", s.sc, s.zkNS, time.Since(t).Round(time.Millisecond))
}

// reportEtcd adds the replicated store's figures: raft entries committed
// and key writes per second over the window (each member keeps the last
// etcd_catchup_entries entries in memory, and every key write's revision
// until compaction), each member's backend size at
// the end (mapped: part of each replica's RssFile), and the second
// standby's VmRSS.
func (s *simRun) reportEtcd(m0, m1 promtext.Set) {
	idx := func(m promtext.Set) float64 {
		top := 0.0
		for k, v := range m {
			if strings.HasPrefix(k, "elasticjob_store_member_raft_index") {
				top = max(top, v)
			}
		}
		return top
	}
	var sizes []string
	for k, v := range m1 {
		if strings.HasPrefix(k, "elasticjob_store_db_size_bytes") {
			sizes = append(sizes, bench.MB(v))
		}
	}
	slices.Sort(sizes)
	writes := m1.Sum("etcd_mvcc_put_total") + m1.Sum("etcd_mvcc_delete_total") - m0.Sum("etcd_mvcc_put_total") - m0.Sum("etcd_mvcc_delete_total")
	s.r.Add(s.sc, "etcd: raft entries/s; key writes (puts, deletes)/s in window; members' backend size at end",
		fmt.Sprintf("%.0f/s; %.0f/s; %s", (idx(m1)-idx(m0))/s.window, writes/s.window, strings.Join(sizes, ", ")), "", nil)
	if s.sb2 != nil {
		m, err := s.sb2.API.Scrape()
		if err != nil {
			s.r.Note(s.sc + ": the second standby's /metrics: " + err.Error())
		}
		s.reportStandbyMem("second standby", s.sb2, m)
	}
}

// reportStandbyMem adds a standby's VmRSS, RssFile (on etcd mostly the
// member's database) and Go heap in use (m: its /metrics; nil: unknown).
func (s *simRun) reportStandbyMem(name string, sb *bench.Scheduler, m promtext.Set) {
	mem, err := bench.ReadMem(sb.PID())
	if err != nil {
		return
	}
	heap, cpu := "?", "?"
	if m != nil {
		heap = bench.MB(m.Sum("go_memstats_heap_inuse_bytes"))
		cpu = fmt.Sprintf("%.1f s", m.Sum("process_cpu_seconds_total"))
	}
	s.r.Add(s.sc, name+" at end: VmRSS; RssFile; Go heap in use; CPU since its start", bench.MB(float64(mem.RSS))+"; "+bench.MB(float64(mem.File))+"; "+heap+"; "+cpu, "", nil)
}
