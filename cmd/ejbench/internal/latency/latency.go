package latency

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// startOverhead runs the script n times locally and returns the p50 of
// (recorded timestamp − time just before exec): sh start-up plus the
// `date` fork/exec, an upper bound of what the measurement adds.
func startOverhead(n int) float64 {
	dir, err := os.MkdirTemp("", "ejbench-sh-")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(dir)
	s, out, err := bench.WriteStartScript(dir)
	if err != nil {
		return 0
	}
	var d []float64
	for i := 0; i < n; i++ {
		t := time.Now().UnixNano()
		if err := exec.Command(s).Run(); err != nil {
			return 0
		}
		ts := bench.ReadStarts(out)
		if len(ts) == i+1 {
			d = append(d, float64(ts[i]-t)/1e9)
		}
	}
	return promtext.Percentile(d, .5)
}

// Run measures ready→ACCEPT and trigger→process start on an idle
// embedded scheduler, with a warm executor (default idle timeout) and with
// a cold one (--executor-idle-timeout 0s).
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	for _, mode := range []struct {
		name  string
		flags []string
		cold  bool
	}{{"warm", nil, false}, {"cold", []string{"--executor-idle-timeout", "0s"}, true}} {
		if err := latencySeries(ctx, o, r, mode.name, mode.cold, mode.flags); err != nil {
			return fmt.Errorf("%s executor: %w", mode.name, err)
		}
	}
	return nil
}

func latencySeries(ctx context.Context, o options, r *bench.Report, name string, cold bool, flags []string) error {
	dir, cleanup, err := bench.TempDir(o.Env, "latency-"+name)
	if err != nil {
		return err
	}
	defer cleanup()
	work := filepath.Join(dir, "app")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	script, out, err := bench.WriteStartScript(work)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sched"), 0o750); err != nil {
		return err
	}
	p, err := bench.StartScheduler(o.BinDir, filepath.Join(dir, "sched"), flags...)
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	app := fmt.Sprintf(`{"appName":"lat_app","appURL":"file://%s","bootstrapScript":"start.sh","cpuCount":0.1,"memoryMB":32,"appCacheEnable":true}`, script)
	if err := p.API.PostJSON("/api/app", app); err != nil {
		return err
	}
	if err := p.API.PostJSON("/api/job/register", `{"jobName":"lat_job","appName":"lat_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return err
	}
	finished := func() (float64, error) {
		m, err := p.API.Scrape()
		if err != nil {
			return 0, err
		}
		return m.Sum("elasticjob_tasks_ended_total", `job="lat_job"`, `result="finished"`), nil
	}
	// One warm-up run (fetches and caches the app; starts the executor).
	runs := o.triggers + 1
	bench.Logf("latency/%s: %d sequential triggers (first is a warm-up, not counted)", name, runs)
	var toStart, reqLat []float64
	var m0 promtext.Set
	misses := 0
	for i := 0; i < runs && ctx.Err() == nil; i++ {
		if i == 1 {
			if m0, err = p.API.Scrape(); err != nil {
				return err
			}
		}
		if cold && !bench.WaitNoExecutors(ctx, o.ExecutorPath, p.DataDir, p.PID(), 5*time.Second) {
			r.Note(fmt.Sprintf("latency/%s: an executor was still alive before run %d", name, i))
		}
		before := len(bench.ReadStarts(out))
		t := time.Now()
		if err := p.API.Trigger("lat_job"); err != nil {
			return err
		}
		reqLat = append(reqLat, time.Since(t).Seconds())
		var started int64
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			if ts := bench.ReadStarts(out); len(ts) > before {
				started = ts[before]
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		if started == 0 {
			misses++
		} else if i > 0 {
			toStart = append(toStart, float64(started-t.UnixNano())/1e9)
		}
		// Wait until this execution has finished before the next trigger.
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			if n, err := finished(); err == nil && n >= float64(i+1) {
				break
			}
			time.Sleep(3 * time.Millisecond)
		}
		if err := bench.SleepCtx(ctx, o.gap); err != nil {
			return err
		}
	}
	m1, err := p.API.Scrape()
	if err != nil {
		return err
	}
	h := m1.Histogram("elasticjob_ready_to_accept_seconds").Minus(m0.Histogram("elasticjob_ready_to_accept_seconds"))
	a50, _ := h.Quantile(.5)
	a99, a99b := h.Quantile(.99)
	sc := "latency/" + name
	desc := "warm executor (idle timeout 10s)"
	if cold {
		desc = "cold executor (--executor-idle-timeout 0s)"
	}
	r.Add(sc, "setup", fmt.Sprintf("%s, %d triggers, %d no-start", desc, len(toStart), misses), "", nil)
	s50, s99 := promtext.Percentile(toStart, .5), promtext.Percentile(toStart, .99)
	if cold {
		r.Add(sc, "trigger → process start p50", bench.Ms(s50), "(target is for warm)", nil)
		r.Add(sc, "trigger → process start p99 / max", bench.Ms(s99)+" / "+bench.Ms(promtext.Max(toStart)), "", nil)
	} else {
		r.Add(sc, "trigger → process start p50", bench.Ms(s50), "≤ 25 ms", bench.Le(s50, .025))
		r.Add(sc, "trigger → process start p99 / max", bench.Ms(s99)+" / "+bench.Ms(promtext.Max(toStart)), "p99 ≤ 100 ms", bench.Le(s99, .1))
	}
	r.Add(sc, "ready → ACCEPT p50 (interpolated)", bench.Ms(a50), "≤ 2 ms", bench.Le(a50, .002))
	r.Add(sc, "ready → ACCEPT p99 (interpolated; bucket ≤)", bench.Ms(a99)+" (≤ "+bench.Ms(a99b)+")", "", nil)
	r.Add(sc, "trigger request p50 / p99", bench.Ms(promtext.Percentile(reqLat, .5))+" / "+bench.Ms(promtext.Percentile(reqLat, .99)), "", nil)
	addStages(r, sc, m0, m1)
	if !cold {
		ov := startOverhead(50)
		r.Add(sc, "sh + `date` start overhead (local exec → timestamp, p50)", bench.Ms(ov), "included above", nil)
	}
	if cold && misses > 0 {
		r.Note(fmt.Sprintf("latency/cold: %d triggers never recorded a start within 15 s", misses))
	}
	return nil
}

// addStages prints each launch-path stage's p50 and p99 (interpolated in
// the histogram's buckets) and mean over the observations between two
// scrapes.
func addStages(r *bench.Report, sc string, m0, m1 promtext.Set) {
	const name = "elasticjob_launch_stage_seconds"
	for _, st := range bench.LaunchStages {
		sel := `stage="` + st.Name + `"`
		h := m1.Histogram(name, sel).Minus(m0.Histogram(name, sel))
		p50, _ := h.Quantile(.5)
		p99, _ := h.Quantile(.99)
		mean := math.NaN()
		if h.Count > 0 {
			mean = h.Sum / h.Count
		}
		r.Add(sc, fmt.Sprintf("stage %s (%s) p50 / p99 / mean", st.Name, st.What),
			fmt.Sprintf("%s / %s / %s (%.0f)", bench.Ms(p50), bench.Ms(p99), bench.Ms(mean), h.Count), "", nil)
	}
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
