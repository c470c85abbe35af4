package clustersim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/masterload"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// simStores are the registries the cluster-sim scenario runs against.
func simStores(o options) ([]string, error) {
	var out []string
	for _, st := range strings.Split(o.simStore, ",") {
		switch st = strings.TrimSpace(st); st {
		case "both":
			out = append(out, "embedded", "zk")
		case "all":
			out = append(out, "embedded", "zk", "zk-ensemble")
		case "embedded", "zk", "zk-ensemble", "etcd":
			out = append(out, st)
		default:
			return nil, fmt.Errorf("-sim-store %q: want embedded, zk, zk-ensemble, etcd, both or all", o.simStore)
		}
	}
	return out, nil
}

// simZKServers are the ZooKeeper servers of a variant ("" for embedded).
func simZKServers(o options, store string) string {
	switch store {
	case "zk":
		return o.simZK
	case "zk-ensemble":
		return o.simZKEnsemble
	}
	return ""
}

// Run runs the scheduler against bin/mesos-local in simulated
// cluster mode (o.simAgents agents, tasks that run no process), once per
// registry: o.simJobs jobs of 1–10 shards with crons spread over the
// minute, observed for o.simWindow. A ZooKeeper variant without
// ZooKeeper (-sim-zk, EJ_TEST_ZK) is skipped with a note.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	stores, err := simStores(o)
	if err != nil {
		return err
	}
	var firstErr error
	for _, st := range stores {
		if ctx.Err() != nil {
			break
		}
		if st != "embedded" && st != "etcd" && simZKServers(o, st) == "" {
			r.Note("cluster-sim/" + st + " skipped: no ZooKeeper (set EJ_TEST_ZK or -sim-zk host:port, EJ_TEST_ZK_ENSEMBLE or -sim-zk-ensemble; scripts/services.sh start DIR / start-ensemble DIR)")
			continue
		}
		if st == stores[0] && o.simMasterLoad > 0 {
			if err := runMasterCeiling(ctx, o, r); err != nil {
				r.Note("cluster-sim master ceiling could not complete: " + bench.FirstLine(err.Error()))
			}
		}
		bench.Logf("cluster-sim/%s: %d simulated agents, %d jobs, %s window", st, o.simAgents, o.simJobs, o.simWindow)
		if err := runSimVariant(ctx, o, r, st); err != nil {
			bench.Logf("!!! cluster-sim/%s: %v", st, err)
			r.Note(fmt.Sprintf("cluster-sim/%s could not complete: %v", st, bench.FirstLine(err.Error())))
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// simRun is one variant's processes and settings.
type simRun struct {
	o     options
	r     *bench.Report
	sc    string // report scenario name
	store string
	dir   string
	ml    *bench.MesosLocal
	p     *bench.Scheduler
	sb    *bench.Scheduler // the standby (ZooKeeper variants with -sim-standby)
	sb2   *bench.Scheduler // the etcd variant's second standby (three members)
	// how each running scheduler was started (a killed one is started
	// again so), and the one the last takeover killed
	specs  map[*bench.Scheduler]schedSpec
	killed *bench.Scheduler
	zk     string // ZooKeeper servers ("" for the embedded store)
	zkNS   string // ZooKeeper namespace of the scheduler (zk variant)

	registered int           // jobs registered
	launches   float64       // launches in the window (zkAfter relates ZooKeeper's writes to them)
	zkTxns     float64       // ZooKeeper write transactions in the window
	window     float64       // seconds
	readSlack  time.Duration // the largest uncertainty of a counter reading's time (scrapeAt)
}

func runSimVariant(ctx context.Context, o options, r *bench.Report, store string) error {
	dir, cleanup, err := bench.TempDir(o.Env, "clustersim-"+store)
	if err != nil {
		return err
	}
	defer cleanup()
	s := &simRun{o: o, r: r, sc: "cluster-sim/" + store, store: store, dir: dir, zk: simZKServers(o, store)}
	if err := s.start(); err != nil {
		return err
	}
	defer s.stop()
	if err := s.registerAll(ctx); err != nil {
		return err
	}
	bench.Logf("%s: warm-up %s", s.sc, o.simWarmup)
	if err := bench.SleepCtx(ctx, o.simWarmup); err != nil {
		return err
	}
	s.findLeader() // the leadership may have moved while registering
	if err := s.measure(ctx); err != nil {
		return err
	}
	if s.sb != nil && o.simTakeover {
		if err := s.takeovers(ctx); err != nil {
			s.r.Note(s.sc + ": takeover: " + err.Error())
		}
	}
	s.stop()
	s.profileTop()
	if s.zk != "" {
		s.zkAfter(ctx)
	}
	return nil
}

// schedSpec is how a scheduler of the run was started.
type schedSpec struct {
	dir  string
	args []string
}

// startSched starts a scheduler of the run and records how.
func (s *simRun) startSched(dir string, args ...string) (*bench.Scheduler, error) {
	p, err := bench.StartScheduler(s.o.BinDir, dir, args...)
	if err != nil {
		return nil, err
	}
	if s.specs == nil {
		s.specs = map[*bench.Scheduler]schedSpec{}
	}
	s.specs[p] = schedSpec{dir: dir, args: slices.Clone(args)}
	return p, nil
}

// simFlags are mesos-local's flags for the simulated cluster.
func simFlags(o options) []string {
	return []string{"--sim-agents", fmt.Sprint(o.simAgents), "--sim-agent-cpus", fmt.Sprint(o.simAgentCPUs),
		"--sim-agent-mem-mb", fmt.Sprint(o.simAgentMemMB), "--sim-task-duration", o.simDuration,
		"--sim-fail-ratio", fmt.Sprint(o.simFailRatio)}
}

// runMasterCeiling drives a simulated mesos-local of its own with
// masterload.Load (no scheduler) for o.simMasterLoad: the master's launch rate
// and CPU per launch when it is the only limit.
func runMasterCeiling(ctx context.Context, o options, r *bench.Report) error {
	dir, cleanup, err := bench.TempDir(o.Env, "masterload")
	if err != nil {
		return err
	}
	defer cleanup()
	flags := simFlags(o)
	prof := filepath.Join(dir, "mesos-local.cpu.pprof")
	if o.simProfile {
		flags = append(flags, "--cpu-profile", prof)
	}
	ml, err := bench.StartMesosLocal(o.BinDir, dir, flags...)
	if err != nil {
		return err
	}
	defer ml.Stop()
	warm := min(10*time.Second, o.simMasterLoad/3)
	bench.Logf("cluster-sim: master ceiling: a minimal framework drives %d simulated agents for %s (the last %s measured)",
		o.simAgents, o.simMasterLoad, o.simMasterLoad-warm)
	type at struct {
		m, h               bench.ProcStat
		launched, finished float64
	}
	var a0 at
	var loadErr error
	var l *masterload.Load
	done := make(chan struct{})
	go func() {
		l, loadErr = masterload.Run(ctx, ml.URL, o.simMasterLoad, func(ld *masterload.Load) { // after warm
			a0.m, _ = bench.ReadProc(ml.PID())
			a0.h, _ = bench.ReadProc(os.Getpid())
			a0.launched, a0.finished = float64(ld.Launched.Load()), float64(ld.Ended.Load())
		}, warm)
		close(done)
	}()
	<-done
	if loadErr != nil {
		return loadErr
	}
	m1, err := bench.ReadProc(ml.PID())
	if err != nil {
		return err
	}
	h1, _ := bench.ReadProc(os.Getpid())
	win := m1.Taken.Sub(a0.m.Taken).Seconds()
	n, fin := float64(l.Launched.Load())-a0.launched, float64(l.Ended.Load())-a0.finished
	const sc = "cluster-sim/master"
	r.Add(sc, fmt.Sprintf("master ceiling, no scheduler: a minimal framework (%d tasks per ACCEPT, 8 ack workers, ≤ %d unfinished)", masterload.TasksPerAccept, masterload.InFlight),
		fmt.Sprintf("%.0f launches/s, %.0f tasks finished/s over %.0f s, %d call errors", n/win, fin/win, win, l.Errs.Load()), "", nil)
	r.Add(sc, "master ceiling: mesos-local CPU per launch; % of one core", fmt.Sprintf("%s; %.0f %% (the driving framework: %.0f %%)",
		bench.Ms((m1.CPU-a0.m.CPU)/max(n, 1)), 100*(m1.CPU-a0.m.CPU)/win, 100*(h1.CPU-a0.h.CPU)/win), "", nil)
	if err := l.FirstErr(); err != nil {
		r.Note("cluster-sim master ceiling: first call error: " + err.Error())
	}
	ml.Stop()
	if o.simProfile {
		bench.ProfileTop(o.BinDir, r, sc, "mesos-local", prof, "of the whole run")
	}
	return nil
}

// start launches mesos-local (simulated) and a scheduler pointed at it.
func (s *simRun) start() error {
	o := s.o
	flags := simFlags(o)
	if o.simProfile {
		flags = append(flags, "--cpu-profile", filepath.Join(s.dir, "mesos-local.cpu.pprof"))
	}
	ml, err := bench.StartMesosLocal(o.BinDir, s.dir, flags...)
	if err != nil {
		return err
	}
	s.ml = ml
	schedDir := filepath.Join(s.dir, "sched")
	if err := os.MkdirAll(schedDir, 0o750); err != nil {
		return err
	}
	args := []string{"--mesos-url", ml.URL, "--allow-file-app-urls=true"}
	if o.simProfile {
		args = append(args, "--debug-pprof", "true")
	}
	if s.zk != "" {
		s.zkNS = fmt.Sprintf("ejbench-sim-%d", time.Now().UnixNano())
		args = append(args, "--zk-servers", s.zk, "--zk-namespace", s.zkNS)
	}
	if s.store == "etcd" {
		return s.startEtcd(args)
	}
	p, err := s.startSched(schedDir, args...)
	if err != nil {
		return err
	}
	s.p = p
	if _, err := p.WaitHealthy(60 * time.Second); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m, err := p.API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler did not become leader within 60 s; log tail:\n%s", bench.Tail(p.LogPath, 2000))
		}
	}
	if s.zk == "" || !o.simStandby {
		return nil
	}
	sbDir := filepath.Join(s.dir, "standby")
	if err := os.MkdirAll(sbDir, 0o750); err != nil {
		return err
	}
	if s.sb, err = s.startSched(sbDir, args...); err != nil {
		return err
	}
	_, err = s.sb.WaitHealthy(60 * time.Second)
	return err
}

func (s *simRun) stop() {
	if s.p != nil {
		s.p.Stop()
		s.p = nil
	}
	if s.sb != nil {
		s.sb.Stop()
		s.sb = nil
	}
	if s.sb2 != nil {
		s.sb2.Stop()
		s.sb2 = nil
	}
	if s.ml != nil {
		s.ml.Stop()
		s.ml = nil
	}
}

// simJob is job i: 1 + i%10 shards (5.5 on average), fired at second
// i%60 of every minute, on app i%apps.
func simJob(i, apps int) string {
	return fmt.Sprintf(`{"jobName":"sim-%06d","appName":"sim_app_%d","jobExecutionType":"TRANSIENT","cron":"%d * * * * ?","shardingTotalCount":%d,"cpuCount":%g,"memoryMB":%d}`,
		i, i%apps, i%60, 1+i%10, simShardCPUs, simShardMemMB)
}

// Per-shard and per-executor resources: small enough that the simulated
// cluster is never the limit (1,000 agents × 8 cpus hold 70,000 shards).
const (
	simShardCPUs  = 0.1
	simShardMemMB = 64
)

// registerAll registers the apps and the jobs (o.workers clients), for at
// most o.simRegisterFor.
func (s *simRun) registerAll(ctx context.Context) error {
	o := s.o
	for a := 0; a < o.simApps; a++ {
		body := fmt.Sprintf(`{"appName":"sim_app_%d","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, a)
		if err := s.p.API.PostJSON("/api/app", body); err != nil {
			return err
		}
	}
	bench.Logf("%s: registering %d jobs (1-10 shards, crons spread over the minute), %d clients, at most %s",
		s.sc, o.simJobs, o.Workers, o.simRegisterFor)
	rctx, cancel := context.WithTimeout(ctx, o.simRegisterFor)
	defer cancel()
	res := bench.RegisterJobs(rctx, s.p.API, o.simJobs, o.Workers, func(i int) string { return simJob(i, o.simApps) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.registered = res.OK
	rate := float64(res.OK) / res.Took.Seconds()
	status := fmt.Sprintf("%d in %.1f s (%.0f jobs/s), %d errors", res.OK, res.Took.Seconds(), rate, res.Errors)
	if res.Retried > 0 {
		status += fmt.Sprintf(", %d requests sent again after a 503", res.Retried)
	}
	if refused := res.Refusals(); refused != "" {
		bench.Logf("%s: registrations answered %s", s.sc, refused)
		s.r.Note(s.sc + ": registrations answered " + refused)
	}
	if res.OK < o.simJobs {
		status += fmt.Sprintf("; stopped at the %s bound", o.simRegisterFor)
	}
	s.r.Add(s.sc, fmt.Sprintf("jobs registered through the API (%d clients)", o.Workers), status, "", nil)
	s.r.Add(s.sc, "registration latency p50 / p99", bench.Ms(promtext.Percentile(res.Lat, .5))+" / "+bench.Ms(promtext.Percentile(res.Lat, .99)), "", nil)
	if res.FirstErr != nil {
		s.r.Note(s.sc + ": first registration error: " + res.FirstErr.Error())
	}
	if res.OK == 0 {
		return fmt.Errorf("no job registered: %v", res.FirstErr)
	}
	return nil
}

// profileTop adds the top of mesos-local's CPU profile, and of the
// scheduler's over the window, to the report.
func (s *simRun) profileTop() {
	if s.o.simProfile {
		bench.ProfileTop(s.o.BinDir, s.r, s.sc, "mesos-local", filepath.Join(s.dir, "mesos-local.cpu.pprof"), "of the whole run")
		if prof := filepath.Join(s.dir, "scheduler.cpu.pprof"); fileExists(prof) {
			bench.ProfileTop(s.o.BinDir, s.r, s.sc, "scheduler", prof, "over the window")
		}
		if prof := filepath.Join(s.dir, "scheduler.block.pprof"); fileExists(prof) {
			bench.PprofTop(s.o.BinDir, s.r, s.sc, "scheduler", prof, "scheduler blocking profile over the window (wall clock waited)", "-cum", "-nodecount=40")
		}
	}
}

// profileSched takes a CPU profile of the scheduler for d through its
// /debug/pprof (debug_pprof is on with -sim-profile).
func (s *simRun) profileSched(d time.Duration) {
	done := make(chan error, 1)
	go func() { // the wall clock the goroutines spend blocked (channels, locks, selects) over the same span
		done <- bench.FetchProfile(s.p.Port, fmt.Sprintf("block?seconds=%d", max(1, int(d.Seconds()))), filepath.Join(s.dir, "scheduler.block.pprof"))
	}()
	if err := bench.FetchCPUProfile(s.p.Port, d, filepath.Join(s.dir, "scheduler.cpu.pprof")); err != nil {
		s.r.Note(s.sc + ": scheduler CPU profile: " + err.Error())
	}
	if err := <-done; err != nil {
		s.r.Note(s.sc + ": scheduler blocking profile: " + err.Error())
	}
}

// heapProfile saves the scheduler's heap profile (at the window's end)
// and adds the top of its live memory to the report.
func (s *simRun) heapProfile() {
	prof := filepath.Join(s.dir, "scheduler.heap.pprof")
	if err := bench.FetchProfile(s.p.Port, "heap", prof); err != nil {
		s.r.Note(s.sc + ": scheduler heap profile: " + err.Error())
		return
	}
	bench.PprofTop(s.o.BinDir, s.r, s.sc, "scheduler", prof, "scheduler heap in use at the window's end", "-sample_index=inuse_space", "-nodecount=25")
	if s.sb == nil {
		return
	}
	prof = filepath.Join(s.dir, "standby.heap.pprof")
	if err := bench.FetchProfile(s.sb.Port, "heap", prof); err != nil {
		s.r.Note(s.sc + ": standby heap profile: " + err.Error())
		return
	}
	bench.PprofTop(s.o.BinDir, s.r, s.sc, "scheduler", prof, "a standby's heap in use at the window's end", "-sample_index=inuse_space", "-nodecount=25")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
