package java

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// javaVariant is one scheduler the Java jobs run through: a bin directory and flags.
type javaVariant struct {
	name  string
	bin   string
	flags []string
	p     *bench.Scheduler
}

// javaVariants are the variants -java-variants and -java-before ask for.
func javaVariants(o options) ([]*javaVariant, error) {
	var vs []*javaVariant
	if o.javaBefore != "" {
		for _, f := range []string{"scheduler", "executor", "elasticjob-cloud-executor.jar"} {
			if _, err := os.Stat(filepath.Join(o.javaBefore, f)); err != nil {
				return nil, fmt.Errorf("-java-before %s: %w", o.javaBefore, err)
			}
		}
		vs = append(vs, &javaVariant{name: "before", bin: o.javaBefore})
	}
	for _, name := range strings.Split(o.javaVariants, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case "after":
			vs = append(vs, &javaVariant{name: name, bin: o.BinDir})
		case "isolation-off":
			vs = append(vs, &javaVariant{name: name, bin: o.BinDir, flags: []string{"--isolation", "off"}})
		case "tuned":
			vs = append(vs, &javaVariant{name: name, bin: o.BinDir, flags: []string{"--executor-java-opts", javaTuning}})
		case "relocation-off":
			vs = append(vs, &javaVariant{name: name, bin: o.BinDir, flags: []string{"--executor-java-opts", javaNoRelocation}})
		default:
			return nil, fmt.Errorf("-java-variants: unknown variant %q (after, isolation-off, tuned, relocation-off)", name)
		}
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("-java-variants: no variant to run")
	}
	return vs, nil
}

// javaJob is one of the TRANSIENT jobs each variant runs.
type javaJob struct{ job, app, class, what string }

var javaJobs = []javaJob{
	{"java_script", "java_script", "", "TRANSIENT from bin/start.sh (JAVA_TOOL_OPTIONS)"},
	{"java_class", "java_jar", "Stamp", "TRANSIENT jar + jobClass (the runner)"},
}

// javaSeries starts a scheduler per variant, registers the apps and jobs on each, then runs
// each TRANSIENT job n times per variant, the variants alternately (java -version right
// before each trigger: the pair's difference holds under a machine's changing load where
// two series' medians do not), and then each variant's DAEMON job.
func javaSeries(ctx context.Context, o options, r *bench.Report, dir string, vs []*javaVariant, appJar, tgz string, n int) error {
	for _, v := range vs {
		sdir := filepath.Join(dir, "sched-"+v.name)
		if err := os.MkdirAll(sdir, 0o750); err != nil {
			return err
		}
		p, err := bench.StartScheduler(v.bin, sdir, v.flags...)
		if err != nil {
			return err
		}
		v.p = p
		defer func() { p.Stop() }()
		if _, err := p.WaitHealthy(30 * time.Second); err != nil {
			return err
		}
		r.Add("java/"+v.name, "setup", strings.TrimSpace(v.bin+" "+strings.Join(v.flags, " ")), "", nil)
		for _, b := range []string{
			fmt.Sprintf(`{"appName":"java_script","appURL":"file://%s","bootstrapScript":"bin/start.sh","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, tgz),
			fmt.Sprintf(`{"appName":"java_jar","appURL":"file://%s","bootstrapScript":"stamp.jar","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, appJar),
		} {
			if err := p.API.PostJSON("/api/app", b); err != nil {
				return err
			}
		}
		for _, j := range javaJobs {
			body := fmt.Sprintf(`{"jobName":%q,"appName":%q,"jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":128,"jobParameter":%q,"jobClass":%q}`,
				j.job, j.app, stampsOf(dir, v, j), j.class)
			if err := p.API.PostJSON("/api/job/register", body); err != nil {
				return err
			}
		}
	}
	for _, j := range javaJobs {
		if err := javaAlternate(ctx, o, r, dir, vs, j, n); err != nil {
			return err
		}
	}
	if !o.javaDaemon {
		return nil
	}
	for _, v := range vs {
		if err := javaDaemon(ctx, r, v.p, "java/"+v.name, dir, v.name); err != nil {
			return err
		}
	}
	return nil
}

func stampsOf(dir string, v *javaVariant, j javaJob) string {
	return filepath.Join(dir, v.name+"-"+j.job+".stamps")
}

// javaAlternate runs job j n times on each variant, alternately, after one warm-up run each
// (the fetch, the executor's start), and reports trigger → execute, the per-run difference
// to java -version and the launch path's stages.
func javaAlternate(ctx context.Context, o options, r *bench.Report, dir string, vs []*javaVariant, j javaJob, n int) error {
	type series struct{ d, floor, diff []float64 }
	got := make([]series, len(vs))
	m0 := make([]promtext.Set, len(vs))
	for i := 0; i <= n && ctx.Err() == nil; i++ {
		for k, v := range vs {
			if i == 1 {
				m, err := v.p.API.Scrape()
				if err != nil {
					return err
				}
				m0[k] = m
			}
			out := stampsOf(dir, v, j)
			tv := time.Now()
			if err := exec.Command("java", "-version").Run(); err != nil {
				return fmt.Errorf("java -version: %w", err)
			}
			floor := time.Since(tv).Seconds()
			t := time.Now().UnixNano()
			if err := v.p.API.Trigger(j.job); err != nil {
				return err
			}
			var st []stamp
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				if st = readStamps(out); len(st) > i {
					break
				}
			}
			if len(st) <= i {
				return fmt.Errorf("%s/%s: run %d recorded no execute", v.name, j.job, i)
			}
			if i > 0 {
				d := float64(st[i].ns-t) / 1e9
				got[k].d, got[k].floor, got[k].diff = append(got[k].d, d), append(got[k].floor, floor), append(got[k].diff, d-floor)
			}
			if err := waitIdle(ctx, v.p, j.job); err != nil {
				return err
			}
			if err := bench.SleepCtx(ctx, o.gap); err != nil {
				return err
			}
		}
	}
	for k, v := range vs {
		sc, g := "java/"+v.name, got[k]
		r.Add(sc, j.what+": trigger → execute entered min / p50 / p99", bench.Ms(minOf(g.d))+" / "+bench.Ms(promtext.Percentile(g.d, .5))+" / "+bench.Ms(promtext.Percentile(g.d, .99)), "", nil)
		r.Add(sc, j.what+": java -version right before each, min / p50", bench.Ms(minOf(g.floor))+" / "+bench.Ms(promtext.Percentile(g.floor, .5)), "", nil)
		r.Add(sc, j.what+": per-run difference (trigger → execute − java -version) p50", bench.Ms(promtext.Percentile(g.diff, .5)), "≤ 50 ms", bench.Le(promtext.Percentile(g.diff, .5), .05))
		m1, err := v.p.API.Scrape()
		if err != nil {
			return err
		}
		r.Add(sc, j.what+": launch stages p50 (commit, seen, accept, agent, executor, fork, running)", stagesP50(m0[k], m1), "", nil)
	}
	return nil
}

// stagesP50 is each launch-path stage's p50 between two scrapes, in the stages' order.
func stagesP50(m0, m1 promtext.Set) string {
	const name = "elasticjob_launch_stage_seconds"
	var out []string
	for _, st := range bench.LaunchStages {
		sel := `stage="` + st.Name + `"`
		p50, _ := m1.Histogram(name, sel).Minus(m0.Histogram(name, sel)).Quantile(.5)
		out = append(out, strings.TrimSuffix(bench.Ms(p50), " ms"))
	}
	return strings.Join(out, ", ") + " ms"
}

// waitIdle waits until no task of job runs.
func waitIdle(ctx context.Context, p *bench.Scheduler, job string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		_, body, err := p.API.Do("GET", "/api/job/tasks/running", "", nil)
		if err == nil && !strings.Contains(string(body), `"jobName":"`+job+`"`) {
			return nil
		}
		if err := bench.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s still runs after 30 s", job)
}

// javaDaemon registers a DAEMON job of the start-script app (no props) firing every second,
// and reads, from its recorded ticks, fire → execute (the real clock: from the tick's second)
// and the resident JVM's RSS.
func javaDaemon(ctx context.Context, r *bench.Report, p *bench.Scheduler, sc, dir, name string) error {
	out := filepath.Join(dir, name+"-daemon.stamps")
	body := fmt.Sprintf(`{"jobName":"java_daemon","appName":"java_script","jobExecutionType":"DAEMON","cron":"*/1 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":128,"jobParameter":%q}`, out)
	if err := p.API.PostJSON("/api/job/register", body); err != nil {
		return err
	}
	const ticks = 21
	var got []stamp
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		if got = readStamps(out); len(got) >= ticks {
			break
		}
	}
	if len(got) < ticks {
		return fmt.Errorf("java_daemon: %d ticks in 60 s", len(got))
	}
	pids := map[string]bool{}
	var d []float64
	for _, s := range got[1:] { // the first tick starts the JVM
		pids[s.pid] = true
		d = append(d, float64(s.ns%1e9)/1e9)
	}
	r.Add(sc, fmt.Sprintf("DAEMON: cron fire → execute entered p50 / p99 (real clock, %d ticks after the first, %d JVM)", len(d), len(pids)),
		bench.Ms(promtext.Percentile(d, .5))+" / "+bench.Ms(promtext.Percentile(d, .99)), "≤ the Go SDK's + 5 ms", nil)
	r.Add(sc, "DAEMON: the first tick (starts the JVM): fire → execute", bench.Ms(float64(got[0].ns%1e9)/1e9), "", nil)
	if st, err := os.ReadFile("/proc/" + got[len(got)-1].pid + "/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				r.Add(sc, "DAEMON: the resident JVM's VmRSS", strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "", nil)
			}
		}
	}
	return p.API.PostJSON("/api/job/java_daemon/disable", "")
}
