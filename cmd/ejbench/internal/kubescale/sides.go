package kubescale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kwokcluster"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// sideResult is one side's window.
type sideResult struct {
	name   string
	own    []string // its processes
	w      windowStats
	wall   float64
	cpu    map[string]float64 // CPU seconds over the window, by process
	idle   map[string]float64 // idle CPU seconds per second, by process
	mem    map[string]bench.Mem
	flows  map[string]float64 // API requests over the window by flow schema
	reqs   map[string]float64 // by verb and resource
	total  float64            // every API request over the window
	extras []string
}

// perPod is the CPU per pod created (ms) of procs over the window, net of their idle rate.
func (s *sideResult) perPod(procs ...string) float64 {
	var c float64
	for _, p := range procs {
		c += s.cpu[p] - s.idle[p]*s.wall
	}
	if s.w.created == 0 {
		return 0
	}
	return c * 1000 / float64(s.w.created)
}

// ours runs the load through our scheduler: its rights and token, the jobs registered, the
// window, then the scheduler stopped and its pods deleted.
func (k *kubeScale) ours(ctx context.Context) error {
	o := k.o
	kc, err := kwokcluster.SchedulerRights(ctx, k.cp.CS, k.repo, k.dir, k.cp.APIPort, k.cp.CA())
	if err != nil {
		return err
	}
	data := filepath.Join(k.dir, "sched")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	args := append([]string{"--kube-config", kc, "--kube-namespace", ksOursNS, "--kube-executor-image", "localhost/elasticjob-executor:bench",
		"--debug-pprof", fmt.Sprint(o.ksProfile)}, o.ksArgs...)
	if k.sched, err = bench.StartScheduler(o.BinDir, data, args...); err != nil {
		return err
	}
	if _, err := k.sched.WaitHealthy(time.Minute); err != nil {
		return err
	}
	api := k.sched.API
	if err := waitNodes(ctx, api, o.ksNodes, 2*time.Minute); err != nil {
		return err
	}
	if err := api.PostJSON("/api/app", ksAppJSON); err != nil {
		return err
	}
	idle := k.idle(ctx, 10*time.Second)
	bench.Logf("kube-scale ours: registering %d jobs (every %d s)", o.ksJobs, o.ksPeriod)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	reg := bench.RegisterJobs(rctx, api, o.ksJobs, o.Workers, func(i int) string { return ksJobJSON(i, o.ksPeriod) })
	cancel()
	k.r.Add("kube-scale", "ours: jobs registered", fmt.Sprintf("%d in %.1f s, %d errors", reg.OK, reg.Took.Seconds(), reg.Errors), "", nil)
	if reg.OK < o.ksJobs {
		return fmt.Errorf("%d of %d jobs registered: %v", reg.OK, o.ksJobs, reg.FirstErr)
	}
	res := k.window(ctx, "ours", ksOursNS, []string{"scheduler"}, idle)
	k.results["ours"] = res
	if m1, err := api.Scrape(); err == nil {
		res.extras = append(res.extras, fmt.Sprintf("scheduler: waiting executions at the end %.0f", m1.Sum("elasticjob_ready_queue_depth")))
	}
	k.sched.Stop()
	k.sched = nil
	k.clean(ctx, ksOursNS)
	return nil
}

// waitNodes polls the console's cluster view until the engine offers n usable nodes.
func waitNodes(ctx context.Context, api *bench.Client, n int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		code, body, err := api.Do(http.MethodGet, "/api/operate/cluster", "", nil)
		var v struct {
			Kubernetes struct {
				Nodes []struct {
					Usable bool `json:"usable"`
				} `json:"nodes"`
			} `json:"kubernetes"`
		}
		usable := 0
		if err == nil && code == http.StatusOK && json.Unmarshal(body, &v) == nil {
			for _, nd := range v.Kubernetes.Nodes {
				if nd.Usable {
					usable++
				}
			}
		}
		if usable >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the scheduler sees %d of %d nodes usable after %s", usable, n, d)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// jobs runs the same load as Indexed Jobs: this process creates each job's Job at its fire.
func (k *kubeScale) jobs(ctx context.Context) error {
	o := k.o
	idle := k.idle(ctx, 10*time.Second)
	f := &jobFirer{cs: k.cp.CS, ns: ksJobsNS, image: "localhost/elasticjob-executor:bench", n: o.ksJobs, period: o.ksPeriod}
	until := time.Now().Add(o.ksWarmup + o.ksWindow)
	done := make(chan struct{})
	go func() { f.run(ctx, until); close(done) }()
	res := k.window(ctx, "jobs", ksJobsNS, []string{"kube-controller-manager", "kube-scheduler"}, idle)
	<-done
	k.results["jobs"] = res
	lat := 0.0
	if c := f.created.Load(); c > 0 {
		lat = float64(f.lateSum.Load()) / float64(c) / 1000
	}
	res.extras = append(res.extras, fmt.Sprintf("Jobs created by the harness at their fires: %d (%d failed; mean create %.1f ms after the fire)", f.created.Load(), f.failed.Load(), lat))
	if e := f.first.Load(); e != nil {
		k.r.Note(fmt.Sprintf("kube-scale jobs: first Job create error: %v", e))
	}
	k.clean(ctx, ksJobsNS)
	return nil
}

// window waits out the warm-up, measures a window and waits the grace for the window's
// late pods, then reports the side's figures.
func (k *kubeScale) window(ctx context.Context, side, ns string, own []string, idle map[string]float64) *sideResult {
	o := k.o
	bench.SleepCtx(ctx, o.ksWarmup)
	res := &sideResult{name: side, own: own, idle: idle, cpu: map[string]float64{}, mem: map[string]bench.Mem{}}
	m0 := k.apiMetrics(ctx)
	s0 := k.sample()
	profDone := make(chan error, 1)
	prof := filepath.Join(os.TempDir(), "ej-bench-kube-scale-scheduler.cpu.pprof")
	if side == "ours" && o.ksProfile {
		go func() { profDone <- bench.FetchCPUProfile(k.sched.Port, o.ksWindow, prof) }()
	}
	from := time.Now()
	bench.Logf("kube-scale %s: window of %s (load average %s)", side, o.ksWindow, bench.Loadavg())
	bench.SleepCtx(ctx, o.ksWindow)
	to := time.Now()
	s1 := k.sample()
	m1 := k.apiMetrics(ctx)
	res.wall = s1[own[0]].Taken.Sub(s0[own[0]].Taken).Seconds()
	for name, a := range s0 {
		if b, ok := s1[name]; ok {
			res.cpu[name] = b.CPU - a.CPU
			res.mem[name] = b.Mem
		}
	}
	res.flows = delta(m0, m1, "apiserver_flowcontrol_dispatched_requests_total", "flow_schema")
	res.reqs = deltaBy(m0, m1, "apiserver_request_total", "verb", "resource", "subresource")
	for _, v := range res.reqs {
		res.total += v
	}
	if side == "ours" && o.ksProfile {
		if err := <-profDone; err != nil {
			k.r.Note("kube-scale: scheduler CPU profile: " + err.Error())
		} else {
			bench.ProfileTop(o.BinDir, k.r, "kube-scale", "scheduler", prof, fmt.Sprintf("over the window (%s)", prof))
		}
	}
	bench.SleepCtx(ctx, o.ksGrace)
	res.w = k.rec[ns].stats(from, to, o.ksJobs)
	if pods := filepath.Join(os.TempDir(), "ej-bench-kube-scale-"+side+"-pods.csv"); k.rec[ns].dump(pods, from, to) == nil {
		k.r.Note(fmt.Sprintf("kube-scale %s: the window's pods, fire → created and → Running: %s", side, pods))
	}
	k.report(res)
	return res
}

// report adds a side's figures.
func (k *kubeScale) report(s *sideResult) {
	r, sc, w := k.r, "kube-scale", s.w
	name := map[string]string{"ours": "ours", "jobs": "Indexed Jobs"}[s.name]
	r.Add(sc, name+": pods created per second", fmt.Sprintf("%.1f/s (%d in %.0f s; of the %d pods the window's fires asked for, %d seen by %s after it, %d ended, %d of them failed)",
		float64(w.created)/s.wall, w.created, s.wall, w.expected, w.fired, k.o.ksGrace, w.ended, w.failed), "", nil)
	r.Add(sc, name+": fire → pod created p50 / p99", bench.Ms(promtext.Percentile(w.toCreated, .5))+" / "+bench.Ms(promtext.Percentile(w.toCreated, .99)), "", nil)
	r.Add(sc, name+": fire → pod Running p50 / p99", bench.Ms(promtext.Percentile(w.toRunning, .5))+" / "+bench.Ms(promtext.Percentile(w.toRunning, .99)), "", nil)
	var parts []string
	for _, p := range s.own {
		parts = append(parts, fmt.Sprintf("%s %.2f ms (idle %.1f ms/s)", p, s.perPod(p), s.idle[p]*1000))
	}
	r.Add(sc, name+": CPU per pod net of idle", strings.Join(parts, ", "), "", nil)
	var others []string
	for _, p := range []string{"kube-apiserver", "etcd", "kwok", "scheduler", "kube-controller-manager", "kube-scheduler"} {
		if _, ok := s.cpu[p]; ok && !contains(s.own, p) {
			others = append(others, fmt.Sprintf("%s %.2f", p, s.perPod(p)))
		}
	}
	r.Add(sc, name+": CPU per pod of the others, net of idle (ms)", strings.Join(others, ", "), "", nil)
	var mems []string
	for _, p := range s.own {
		mems = append(mems, fmt.Sprintf("%s %s (peak %s)", p, bench.MB(float64(s.mem[p].RSS)), bench.MB(float64(s.mem[p].HWM))))
	}
	r.Add(sc, name+": memory (VmRSS at the window's end)", strings.Join(mems, ", "), "", nil)
	r.Add(sc, name+": API requests per second, all / by flow schema", fmt.Sprintf("%.0f/s: %s", s.total/s.wall, topRates(s.flows, s.wall, 8)), "", nil)
	r.Add(sc, name+": API requests per second by verb and resource", topRates(s.reqs, s.wall, 10), "", nil)
	for _, e := range s.extras {
		r.Note("kube-scale " + name + ": " + e)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// topRates prints the largest counts of m per second, largest first.
func topRates(m map[string]float64, wall float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var xs []kv
	for k, v := range m {
		if v > 0 {
			xs = append(xs, kv{k, v})
		}
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || (xs[i].v == xs[j].v && xs[i].k < xs[j].k) })
	var out []string
	for i, x := range xs {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s %.1f", x.k, x.v/wall))
	}
	return strings.Join(out, ", ")
}
