package kubescale

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kwokcluster"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
	"github.com/ejcloud/elasticjob/internal/kwoksim"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kube-scale scenario: the real API server, etcd, kube-controller-
// manager and kube-scheduler of the single-node build with kwok's simulated nodes, and one
// load run through each side in turn on the same cluster:
//   - ours: the scheduler's Kubernetes engine, the jobs registered with seconds-crons; it
//     binds each shard's pod to a node itself, and, as nothing runs an executor on a kwok
//     node, learns each task's end from its pod's phase (the engine's fallback path);
//   - jobs: the same jobs as Indexed Jobs (one per fire, created by this harness at the
//     fire's second, as a seconds-cron would), their pods made by the Job controller and
//     placed by kube-scheduler.
//
// Per side over the same window: pods created per second, fire → pod created and → Running
// (as a watch of this process sees them), the CPU of the side's processes per pod net of
// their idle rate, their memory, and the API server's requests by flow schema (its clients).

const ksOursNS, ksJobsNS = "elasticjob", "kjobs"

type kubeScale struct {
	o       options
	r       *bench.Report
	repo    string
	dir     string
	cp      *kwokcluster.ControlPlane
	kwok    *kwokcluster.Proc
	sched   *bench.Scheduler
	rec     map[string]*podRecorder
	results map[string]*sideResult
}

// Run runs the kube-scale scenario (above): the control plane and kwok
// nodes, then each side's load in turn.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	home := kwokcluster.Home()
	if _, err := os.Stat(filepath.Join(home, "scripts/start.sh")); err != nil {
		r.Note("kube-scale: skipped: no Kubernetes build at " + home + " (set EJ_K8S_HOME)")
		return nil
	}
	if _, err := ksCron(0, o.ksPeriod); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.ksTimeout)
	defer cancel()
	repo, _ := os.Getwd()
	dir, err := os.MkdirTemp("", "ej-bench-kubescale-")
	if err != nil {
		return err
	}
	defer func() {
		if o.Keep {
			bench.Logf("kept %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	k := &kubeScale{o: o, r: r, repo: repo, dir: dir, rec: map[string]*podRecorder{}, results: map[string]*sideResult{}}
	kwokBin := o.ksKwok
	if kwokBin == "" {
		t := time.Now()
		bench.Logf("kube-scale: building %s", kwoksim.Module)
		if kwokBin, err = kwoksim.Build(ctx, dir); err != nil {
			return err
		}
		bench.Logf("kube-scale: kwok built in %s", time.Since(t).Round(time.Second))
	}
	unlock, err := kwokcluster.Lock(ctx, 30*time.Minute, "kube-scale")
	if err != nil {
		return err
	}
	defer unlock()
	defer k.stop()
	if err := k.up(ctx, kwokBin); err != nil {
		return err
	}
	r.Add("kube-scale", "cluster", fmt.Sprintf("%d kwok nodes of %d CPUs, %d GiB; %d jobs of 1–10 shards (5.5 on average) each fired every %d s: %.0f pods/s offered",
		o.ksNodes, o.ksNodeCPUs, o.ksNodeMemGiB, o.ksJobs, o.ksPeriod, offeredRate(o.ksJobs, o.ksPeriod)), "", nil)
	if o.ksSides["ours"] {
		if err := k.ours(ctx); err != nil {
			return fmt.Errorf("ours: %w", err)
		}
	}
	if o.ksSides["jobs"] {
		if err := k.jobs(ctx); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
	}
	k.compare()
	return nil
}

// offeredRate is the pods per second the jobs' fires ask for.
func offeredRate(n, period int) float64 {
	total := 0
	for i := range n {
		total += ksShards(i)
	}
	return float64(total) / float64(period)
}

// up starts the control plane, kwok and the nodes, and the pod watches of both sides.
func (k *kubeScale) up(ctx context.Context, kwokBin string) error {
	o := k.o
	t := time.Now()
	var err error
	k.cp, err = kwokcluster.StartControlPlane(ctx, kwokcluster.Home(), k.dir, o.ksLimits)
	if err != nil {
		return err
	}
	bench.Logf("kube-scale: control plane up in %s (kube-apiserver on %d)", time.Since(t).Round(time.Millisecond), k.cp.APIPort)
	if k.kwok, err = kwokcluster.StartKwok(k.dir, kwokBin, k.cp.Admin, 16); err != nil {
		return err
	}
	for _, ns := range []string{ksOursNS, ksJobsNS} {
		if err := kwokcluster.EnsureNamespace(ctx, k.cp.CS, ns); err != nil {
			return err
		}
	}
	t = time.Now()
	if err := kwokcluster.CreateNodes(ctx, k.cp.CS, k.kwok, "kwok-node-", o.ksNodes, o.ksNodeCPUs, o.ksNodeMemGiB, 3*time.Minute); err != nil {
		return fmt.Errorf("%w; kwok log tail:\n%s", err, bench.Tail(k.kwok.Log, 2000))
	}
	bench.Logf("kube-scale: %d kwok nodes Ready in %s", o.ksNodes, time.Since(t).Round(time.Millisecond))
	for _, ns := range []string{ksOursNS, ksJobsNS} {
		rec := newPodRecorder(ns, o.ksPeriod)
		synced := make(chan struct{})
		go rec.run(ctx, k.cp.CS, synced)
		select {
		case <-synced:
		case <-ctx.Done():
			return ctx.Err()
		}
		k.rec[ns] = rec
	}
	return nil
}

// stop ends everything started, the scheduler first.
func (k *kubeScale) stop() {
	if k.sched != nil {
		k.sched.Stop()
		k.sched = nil
	}
	if k.kwok != nil {
		k.kwok.Stop()
	}
	if k.cp != nil {
		k.cp.Stop()
	}
}

// procsOf names the processes whose CPU and memory a side reads.
func (k *kubeScale) procsOf() map[string]int {
	m := map[string]int{"kube-apiserver": k.cp.API.PID(), "etcd": k.cp.Etcd.PID(), "kube-controller-manager": k.cp.KCM.PID(),
		"kube-scheduler": k.cp.Sched.PID(), "kwok": k.kwok.PID()}
	if k.sched != nil {
		m["scheduler"] = k.sched.PID()
	}
	return m
}

// sample reads every process's CPU and memory.
func (k *kubeScale) sample() map[string]bench.ProcStat {
	out := map[string]bench.ProcStat{}
	for name, pid := range k.procsOf() {
		if st, err := bench.ReadProc(pid); err == nil {
			out[name] = st
		}
	}
	return out
}

// apiMetrics scrapes the API server's /metrics.
func (k *kubeScale) apiMetrics(ctx context.Context) promtext.Set {
	b, err := k.cp.CS.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		bench.Logf("kube-scale: API server metrics: %v", err)
		return nil
	}
	return promtext.Parse(b)
}

// clean deletes a namespace's pods (and Jobs) and waits until none is left.
func (k *kubeScale) clean(ctx context.Context, ns string) {
	bg := metav1.DeletePropagationBackground
	zero := int64(0)
	_ = k.cp.CS.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
	_ = k.cp.CS.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		l, err := k.cp.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		j, err2 := k.cp.CS.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil && err2 == nil && len(l.Items) == 0 && len(j.Items) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	bench.Logf("kube-scale: %s not empty after 3 min", ns)
}

// idle measures each process's CPU seconds per second over d with nothing to do.
func (k *kubeScale) idle(ctx context.Context, d time.Duration) map[string]float64 {
	a := k.sample()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	b := k.sample()
	out := map[string]float64{}
	for name, x := range a {
		if y, ok := b[name]; ok {
			out[name] = (y.CPU - x.CPU) / y.Taken.Sub(x.Taken).Seconds()
		}
	}
	return out
}

func fmtRate(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
