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
)

// The Java scenario (docs/benchmarks.md, Java jobs): a job whose execute records the wall
// clock (ns) and its pid as the first thing it does, run TRANSIENT from a start script
// (the library through JAVA_TOOL_OPTIONS), TRANSIENT as a jar + jobClass (the library's
// runner), with and without the JVM flags of the tuning, and DAEMON (one resident JVM),
// against the JVM's own start on this machine.

const stampJava = `import java.io.FileWriter;
import java.time.Instant;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

public class Stamp implements SimpleJob {
    @Override
    public void execute(ShardingContext context) {
        Instant now = Instant.now();
        String pid = java.lang.management.ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        try (FileWriter w = new FileWriter(context.getJobParameter(), true)) {
            w.write((now.getEpochSecond() * 1000000000L + now.getNano()) + " " + pid + "\n");
        } catch (java.io.IOException ex) {
            throw new IllegalStateException(ex);
        }
    }

    public static void main(String[] args) {
        JobBootstrap.execute(new Stamp());
    }
}
`

// javaTuning are the JVM flags measured against the defaults for the JVMs the executor
// starts itself (executor_java_opts): neither changes what a job computes.
const javaTuning = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"

func runJava(ctx context.Context, o options, r *report) error {
	lib := filepath.Join(o.binDir, "elasticjob-cloud-executor.jar")
	if _, err := os.Stat(lib); err != nil {
		r.note("java: skipped: no " + lib + " (make build builds it where a JDK is)")
		return nil
	}
	if _, err := exec.LookPath("javac"); err != nil {
		r.note("java: skipped: no javac (apt-get install openjdk-17-jdk-headless)")
		return nil
	}
	dir, cleanup, err := tempDir(o, "java")
	if err != nil {
		return err
	}
	defer cleanup()
	appJar, tgz, err := buildStampApp(dir, lib)
	if err != nil {
		return err
	}
	n := min(o.triggers, 40)
	if err := javaVersion(r, n); err != nil {
		return err
	}
	if err := javaLocal(r, dir, lib, appJar, n); err != nil {
		return err
	}
	for _, mode := range []struct{ name, opts string }{{"defaults", ""}, {"tuned", javaTuning}} {
		if err := javaSeries(ctx, o, r, dir, mode.name, mode.opts, appJar, tgz, n); err != nil {
			return err
		}
	}
	return nil
}

// buildStampApp compiles Stamp against the library: stamp.jar, and a tarball whose
// bin/start.sh runs it as the manual's apps do.
func buildStampApp(dir, lib string) (string, string, error) {
	src := filepath.Join(dir, "src")
	app := filepath.Join(dir, "app")
	for _, d := range []string{src, filepath.Join(dir, "classes"), filepath.Join(app, "bin"), filepath.Join(app, "lib")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", err
		}
	}
	if err := os.WriteFile(filepath.Join(src, "Stamp.java"), []byte(stampJava), 0o644); err != nil {
		return "", "", err
	}
	appJar := filepath.Join(app, "lib", "stamp.jar")
	script := "#!/bin/sh\ncd \"$(dirname \"$0\")/..\"\nexec java -cp lib/stamp.jar Stamp \"$@\"\n"
	if err := os.WriteFile(filepath.Join(app, "bin", "start.sh"), []byte(script), 0o755); err != nil {
		return "", "", err
	}
	tgz := filepath.Join(dir, "stamp-app.tar.gz")
	for _, c := range [][]string{
		{"javac", "--release", "8", "-Xlint:-options", "-cp", lib, "-d", filepath.Join(dir, "classes"), filepath.Join(src, "Stamp.java")},
		{"jar", "--create", "--file", appJar, "-C", filepath.Join(dir, "classes"), "."},
		{"tar", "-czf", tgz, "-C", app, "."},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("%s: %v\n%s", c[0], err, out)
		}
	}
	return appJar, tgz, nil
}

// javaVersion is the JVM's own start: java -version, wall clock, p50.
func javaVersion(r *report, n int) error {
	var d []float64
	for range n {
		t := time.Now()
		if err := exec.Command("java", "-version").Run(); err != nil {
			return fmt.Errorf("java -version: %w", err)
		}
		d = append(d, time.Since(t).Seconds())
	}
	r.add("java", "`java -version` wall clock min / p50 / p99", ms(minOf(d))+" / "+ms(percentile(d, .5))+" / "+ms(percentile(d, .99)), "the floor", nil)
	return nil
}

// javaLocal is the JVM started by hand with the library and the job: exec → execute entered.
func javaLocal(r *report, dir, lib, appJar string, n int) error {
	out := filepath.Join(dir, "local.stamps")
	var d []float64
	for i := range n {
		cmd := exec.Command("java", "-Xbootclasspath/a:"+lib, "-cp", appJar, "Stamp")
		cmd.Env = append(os.Environ(), `ELASTICJOB_SHARDING_CONTEXT={"jobName":"local","shardingItem":0,"shardingTotalCount":1,"jobParameter":"`+out+`"}`)
		t := time.Now().UnixNano()
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("java Stamp: %v\n%s", err, o)
		}
		if st := readStamps(out); len(st) == i+1 {
			d = append(d, float64(st[i].ns-t)/1e9)
		}
	}
	r.add("java", "by hand: exec java → execute entered min / p50 (JVM start + the library)", ms(minOf(d))+" / "+ms(percentile(d, .5)), "", nil)
	return nil
}

type stamp struct {
	ns  int64
	pid string
}

func readStamps(path string) []stamp {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []stamp
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out = append(out, stamp{v, f[1]})
		}
	}
	return out
}

// javaSeries runs the TRANSIENT jobs (start script; jar + jobClass) n times each through an
// embedded scheduler, then a DAEMON job, with the executor's JVM flags opts.
func javaSeries(ctx context.Context, o options, r *report, dir, name, opts, appJar, tgz string, n int) error {
	sdir := filepath.Join(dir, "sched-"+name)
	if err := os.MkdirAll(sdir, 0o750); err != nil {
		return err
	}
	var flags []string
	if opts != "" {
		flags = append(flags, "--executor-java-opts", opts)
	}
	p, err := startScheduler(o.binDir, sdir, flags...)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	if _, err := p.waitHealthy(30 * time.Second); err != nil {
		return err
	}
	sc := "java/" + name
	if opts != "" {
		r.add(sc, "setup", "executor_java_opts "+opts+" (the JVMs the executor starts: the jobClass row)", "", nil)
	}
	posts := []string{
		fmt.Sprintf(`{"appName":"java_script","appURL":"file://%s","bootstrapScript":"bin/start.sh","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, tgz),
		fmt.Sprintf(`{"appName":"java_jar","appURL":"file://%s","bootstrapScript":"stamp.jar","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`, appJar),
	}
	for _, b := range posts {
		if err := p.api.postJSON("/api/app", b); err != nil {
			return err
		}
	}
	for _, j := range []struct{ job, app, class, what string }{
		{"java_script", "java_script", "", "TRANSIENT from bin/start.sh (JAVA_TOOL_OPTIONS)"},
		{"java_class", "java_jar", "Stamp", "TRANSIENT jar + jobClass (the runner)"},
	} {
		out := filepath.Join(dir, name+"-"+j.job+".stamps")
		body := fmt.Sprintf(`{"jobName":%q,"appName":%q,"jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":128,"jobParameter":%q,"jobClass":%q}`,
			j.job, j.app, out, j.class)
		if err := p.api.postJSON("/api/job/register", body); err != nil {
			return err
		}
		var d, floor, diff []float64
		for i := 0; i <= n && ctx.Err() == nil; i++ { // the first run is a warm-up (fetch, executor start)
			// java -version right before each trigger: the pair's difference holds under a
			// machine's changing load where the two series' medians do not.
			tv := time.Now()
			if err := exec.Command("java", "-version").Run(); err != nil {
				return fmt.Errorf("java -version: %w", err)
			}
			v := time.Since(tv).Seconds()
			t := time.Now().UnixNano()
			if err := p.api.trigger(j.job); err != nil {
				return err
			}
			var got []stamp
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				if got = readStamps(out); len(got) > i {
					break
				}
			}
			if len(got) <= i {
				return fmt.Errorf("%s: run %d recorded no execute", j.job, i)
			}
			if i > 0 {
				d = append(d, float64(got[i].ns-t)/1e9)
				floor = append(floor, v)
				diff = append(diff, float64(got[i].ns-t)/1e9-v)
			}
			if err := waitIdle(ctx, p, j.job); err != nil {
				return err
			}
			if err := sleepCtx(ctx, o.gap); err != nil {
				return err
			}
		}
		r.add(sc, j.what+": trigger → execute entered min / p50 / p99", ms(minOf(d))+" / "+ms(percentile(d, .5))+" / "+ms(percentile(d, .99)), "", nil)
		r.add(sc, j.what+": java -version right before each, min / p50", ms(minOf(floor))+" / "+ms(percentile(floor, .5)), "", nil)
		r.add(sc, j.what+": per-run difference (trigger → execute − java -version) p50", ms(percentile(diff, .5)), "≤ 50 ms", le(percentile(diff, .5), .05))
	}
	return javaDaemon(ctx, r, p, sc, dir, name)
}

// waitIdle waits until no task of job runs.
func waitIdle(ctx context.Context, p *schedProc, job string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		_, body, err := p.api.do("GET", "/api/job/tasks/running", "", nil)
		if err == nil && !strings.Contains(string(body), `"jobName":"`+job+`"`) {
			return nil
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s still runs after 30 s", job)
}

// javaDaemon registers a DAEMON job of the start-script app (no props) firing every second,
// and reads, from its recorded ticks, fire → execute (the real clock: from the tick's second)
// and the resident JVM's RSS.
func javaDaemon(ctx context.Context, r *report, p *schedProc, sc, dir, name string) error {
	out := filepath.Join(dir, name+"-daemon.stamps")
	body := fmt.Sprintf(`{"jobName":"java_daemon","appName":"java_script","jobExecutionType":"DAEMON","cron":"*/1 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":128,"jobParameter":%q}`, out)
	if err := p.api.postJSON("/api/job/register", body); err != nil {
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
	r.add(sc, fmt.Sprintf("DAEMON: cron fire → execute entered p50 / p99 (real clock, %d ticks after the first, %d JVM)", len(d), len(pids)),
		ms(percentile(d, .5))+" / "+ms(percentile(d, .99)), "≤ the Go SDK's + 5 ms", nil)
	r.add(sc, "DAEMON: the first tick (starts the JVM): fire → execute", ms(float64(got[0].ns%1e9)/1e9), "", nil)
	if st, err := os.ReadFile("/proc/" + got[len(got)-1].pid + "/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				r.add(sc, "DAEMON: the resident JVM's VmRSS", strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "", nil)
			}
		}
	}
	return p.api.postJSON("/api/job/java_daemon/disable", "")
}

func minOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}
