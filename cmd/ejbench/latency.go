package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// The job's whole script: record the wall clock (ns) at process start.
// `date` is one fork+exec after sh starts; startOverhead measures what
// sh + date add on this machine, so it can be told apart.
const startScript = "#!/bin/sh\ndate +%%s%%N >> %s\n"

func writeStartScript(dir string) (script, out string, err error) {
	out = filepath.Join(dir, "starts")
	script = filepath.Join(dir, "start.sh")
	return script, out, os.WriteFile(script, []byte(fmt.Sprintf(startScript, out)), 0o755)
}

// readStarts returns the recorded start times.
func readStarts(path string) []int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ts []int64
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if v, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64); err == nil {
			ts = append(ts, v)
		}
	}
	return ts
}

// startOverhead runs the script n times locally and returns the p50 of
// (recorded timestamp − time just before exec): sh start-up plus the
// `date` fork/exec, an upper bound of what the measurement adds.
func startOverhead(n int) float64 {
	dir, err := os.MkdirTemp("", "ejbench-sh-")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(dir)
	s, out, err := writeStartScript(dir)
	if err != nil {
		return 0
	}
	var d []float64
	for i := 0; i < n; i++ {
		t := time.Now().UnixNano()
		if err := exec.Command(s).Run(); err != nil {
			return 0
		}
		ts := readStarts(out)
		if len(ts) == i+1 {
			d = append(d, float64(ts[i]-t)/1e9)
		}
	}
	return promtext.Percentile(d, .5)
}

// runLatency measures ready→ACCEPT and trigger→process start on an idle
// embedded scheduler, with a warm executor (default idle timeout) and with
// a cold one (--executor-idle-timeout 0s).
func runLatency(ctx context.Context, o options, r *report) error {
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

func latencySeries(ctx context.Context, o options, r *report, name string, cold bool, flags []string) error {
	dir, cleanup, err := tempDir(o.env, "latency-"+name)
	if err != nil {
		return err
	}
	defer cleanup()
	work := filepath.Join(dir, "app")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	script, out, err := writeStartScript(work)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sched"), 0o750); err != nil {
		return err
	}
	p, err := startScheduler(o.binDir, filepath.Join(dir, "sched"), flags...)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	if _, err := p.waitHealthy(30 * time.Second); err != nil {
		return err
	}
	app := fmt.Sprintf(`{"appName":"lat_app","appURL":"file://%s","bootstrapScript":"start.sh","cpuCount":0.1,"memoryMB":32,"appCacheEnable":true}`, script)
	if err := p.api.postJSON("/api/app", app); err != nil {
		return err
	}
	if err := p.api.postJSON("/api/job/register", `{"jobName":"lat_job","appName":"lat_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return err
	}
	finished := func() (float64, error) {
		m, err := p.api.scrape()
		if err != nil {
			return 0, err
		}
		return m.Sum("elasticjob_tasks_ended_total", `job="lat_job"`, `result="finished"`), nil
	}
	// One warm-up run (fetches and caches the app; starts the executor).
	runs := o.triggers + 1
	logf("latency/%s: %d sequential triggers (first is a warm-up, not counted)", name, runs)
	var toStart, reqLat []float64
	var m0 promtext.Set
	misses := 0
	for i := 0; i < runs && ctx.Err() == nil; i++ {
		if i == 1 {
			if m0, err = p.api.scrape(); err != nil {
				return err
			}
		}
		if cold && !waitNoExecutors(ctx, o.executorPath, p.dataDir, p.pid(), 5*time.Second) {
			r.note(fmt.Sprintf("latency/%s: an executor was still alive before run %d", name, i))
		}
		before := len(readStarts(out))
		t := time.Now()
		if err := p.api.trigger("lat_job"); err != nil {
			return err
		}
		reqLat = append(reqLat, time.Since(t).Seconds())
		var started int64
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			if ts := readStarts(out); len(ts) > before {
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
		if err := sleepCtx(ctx, o.gap); err != nil {
			return err
		}
	}
	m1, err := p.api.scrape()
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
	r.add(sc, "setup", fmt.Sprintf("%s, %d triggers, %d no-start", desc, len(toStart), misses), "", nil)
	s50, s99 := promtext.Percentile(toStart, .5), promtext.Percentile(toStart, .99)
	if cold {
		r.add(sc, "trigger → process start p50", ms(s50), "(target is for warm)", nil)
		r.add(sc, "trigger → process start p99 / max", ms(s99)+" / "+ms(promtext.Max(toStart)), "", nil)
	} else {
		r.add(sc, "trigger → process start p50", ms(s50), "≤ 25 ms", le(s50, .025))
		r.add(sc, "trigger → process start p99 / max", ms(s99)+" / "+ms(promtext.Max(toStart)), "p99 ≤ 100 ms", le(s99, .1))
	}
	r.add(sc, "ready → ACCEPT p50 (interpolated)", ms(a50), "≤ 2 ms", le(a50, .002))
	r.add(sc, "ready → ACCEPT p99 (interpolated; bucket ≤)", ms(a99)+" (≤ "+ms(a99b)+")", "", nil)
	r.add(sc, "trigger request p50 / p99", ms(promtext.Percentile(reqLat, .5))+" / "+ms(promtext.Percentile(reqLat, .99)), "", nil)
	addStages(r, sc, m0, m1)
	if !cold {
		ov := startOverhead(50)
		r.add(sc, "sh + `date` start overhead (local exec → timestamp, p50)", ms(ov), "included above", nil)
	}
	if cold && misses > 0 {
		r.note(fmt.Sprintf("latency/cold: %d triggers never recorded a start within 15 s", misses))
	}
	return nil
}

// launchStages are the scheduler's launch-path stages
// (elasticjob_launch_stage_seconds{stage}), in order, with what each
// spans; see docs/operations.md, Metrics.
var launchStages = []struct{ name, what string }{
	{"commit", "API commit (trigger's ready entry)"},
	{"seen", "committed → ready entry seen by the leader"},
	{"accept", "seen → ACCEPT sent"},
	{"agent", "ACCEPT → executor got the LAUNCH"},
	{"executor", "LAUNCH → process start begun"},
	{"fork", "fork+exec of the job's process"},
	{"running", "process started → TASK_RUNNING at the scheduler"},
}

// addStages prints each launch-path stage's p50 and p99 (interpolated in
// the promtext.Histogram's buckets) and mean over the observations between two
// scrapes.
func addStages(r *report, sc string, m0, m1 promtext.Set) {
	const name = "elasticjob_launch_stage_seconds"
	for _, st := range launchStages {
		sel := `stage="` + st.name + `"`
		h := m1.Histogram(name, sel).Minus(m0.Histogram(name, sel))
		p50, _ := h.Quantile(.5)
		p99, _ := h.Quantile(.99)
		mean := math.NaN()
		if h.Count > 0 {
			mean = h.Sum / h.Count
		}
		r.add(sc, fmt.Sprintf("stage %s (%s) p50 / p99 / mean", st.name, st.what),
			fmt.Sprintf("%s / %s / %s (%.0f)", ms(p50), ms(p99), ms(mean), h.Count), "", nil)
	}
}
