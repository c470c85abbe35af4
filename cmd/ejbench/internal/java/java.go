package java

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

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
	"github.com/ejcloud/elasticjob/executor/process"
)

// The Java scenario (docs/benchmarks.md, Java jobs): a job whose execute records the wall
// clock (ns) and its pid as the first thing it does, run TRANSIENT from a start script
// (the library through JAVA_TOOL_OPTIONS) and as a jar + jobClass (the library's runner),
// through variants of the scheduler run alternately (the code before and after, isolation
// off, JVM flags), and DAEMON (one resident JVM); against the JVM's own start on this
// machine: java -version right before each trigger, and by hand in a cgroup as a task's.

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

// javaNoRelocation maps the JDK's class-data-sharing archive at its fixed address instead of
// relocating it at every start (Debian's JDK 17 relocates it, ArchiveRelocationMode=1, for
// address-space randomization): measured, never a default (docs/benchmarks.md, Java jobs).
const javaNoRelocation = "-XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0"

// stampScript is the app's bin/start.sh, as the manual's apps start their JVM.
const stampScript = "#!/bin/sh\ncd \"$(dirname \"$0\")/..\"\nexec java -cp lib/stamp.jar Stamp \"$@\"\n"

// Run runs the java scenario (above): the JVM's own start by hand, then
// each variant's triggers, as many as the latency series' (at most 40),
// triggers apart by gap.
func Run(ctx context.Context, env bench.Env, opt Options, triggers int, gap time.Duration, r *bench.Report) error {
	return run(ctx, options{Env: env, Options: opt, triggers: triggers, gap: gap}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	lib := filepath.Join(o.BinDir, "elasticjob-cloud-executor.jar")
	if _, err := os.Stat(lib); err != nil {
		r.Note("java: skipped: no " + lib + " (make build builds it where a JDK is)")
		return nil
	}
	if _, err := exec.LookPath("javac"); err != nil {
		r.Note("java: skipped: no javac (apt-get install openjdk-17-jdk-headless)")
		return nil
	}
	dir, cleanup, err := bench.TempDir(o.Env, "java")
	if err != nil {
		return err
	}
	defer cleanup()
	appJar, tgz, err := buildStampApp(dir, lib)
	if err != nil {
		return err
	}
	n := min(o.triggers, 40)
	r.Add("java", "load average at the start", loadAvg(), "", nil)
	if err := javaByHand(r, dir, lib, appJar, n); err != nil {
		return err
	}
	vs, err := javaVariants(o)
	if err != nil {
		return err
	}
	if err := javaSeries(ctx, o, r, dir, vs, appJar, tgz, n); err != nil {
		return err
	}
	r.Add("java", "load average at the end", loadAvg(), "", nil)
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
	if err := os.WriteFile(filepath.Join(app, "bin", "start.sh"), []byte(stampScript), 0o755); err != nil {
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

// javaByHand times, alternately, what a job's start is made of without the scheduler:
// java -version (in the harness's cgroup, and in a cgroup of its own as a task's JVM is),
// the job's JVM by hand (exec java → execute entered), and the app's start script with the
// executor's JAVA_TOOL_OPTIONS. Wall clock and CPU (user + system) of each process.
func javaByHand(r *bench.Report, dir, lib, appJar string, n int) error {
	out := filepath.Join(dir, "hand.stamps")
	env := append(os.Environ(), `ELASTICJOB_SHARDING_CONTEXT={"jobName":"hand","shardingItem":0,"shardingTotalCount":1,"jobParameter":"`+out+`"}`)
	cg := newFloorCgroup()
	defer cg.close()
	type row struct {
		what       string
		cmd        []string
		env        []string
		cgroup     bool
		stamps     bool
		wall, cpus []float64
		exec       []float64
	}
	rows := []*row{
		{what: "`java -version`", cmd: []string{"java", "-version"}},
		{what: "`java -version` in a cgroup of its own (as a task's JVM)", cmd: []string{"java", "-version"}, cgroup: true},
		{what: "the job's JVM by hand (`-Xbootclasspath/a`)", cmd: []string{"java", "-Xbootclasspath/a:" + lib, "-cp", appJar, "Stamp"}, env: env, stamps: true},
		{what: "the job's JVM by hand, the library on the class path", cmd: []string{"java", "-cp", appJar + ":" + lib, "Stamp"}, env: env, stamps: true},
		{what: "bin/start.sh by hand with the executor's JAVA_TOOL_OPTIONS", cmd: []string{filepath.Join(dir, "app", "bin", "start.sh")},
			env: append(env, "JAVA_TOOL_OPTIONS=-Xbootclasspath/a:"+lib), stamps: true},
	}
	if cg == nil {
		rows = append(rows[:1], rows[2:]...)
	}
	for range n {
		for _, x := range rows {
			t := time.Now()
			wall, cpu, err := cg.run(x.cgroup, x.cmd, x.env, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", x.what, err)
			}
			x.wall, x.cpus = append(x.wall, wall), append(x.cpus, cpu)
			if st := readStamps(out); x.stamps && len(st) > 0 {
				x.exec = append(x.exec, float64(st[len(st)-1].ns-t.UnixNano())/1e9)
			}
		}
	}
	for _, x := range rows {
		v := fmt.Sprintf("wall %s / %s, CPU %s", bench.Ms(minOf(x.wall)), bench.Ms(promtext.Percentile(x.wall, .5)), bench.Ms(promtext.Percentile(x.cpus, .5)))
		if len(x.exec) > 0 {
			v = fmt.Sprintf("exec → execute %s / %s; ", bench.Ms(minOf(x.exec)), bench.Ms(promtext.Percentile(x.exec, .5))) + v
		}
		r.Add("java", "by hand: "+x.what+": min / p50 (CPU p50)", v, "", nil)
	}
	return nil
}

// floorCgroup is a cgroup like a task's (a child of the scheduler's cgroups root, at the
// default weight) for java -version; nil where cgroups are not usable.
type floorCgroup struct {
	g           *cgroups.Group
	join, leave []string
	clone       string
}

func newFloorCgroup() *floorCgroup {
	h, err := cgroups.Detect(cgroups.Probe{Root: "elasticjob"})
	if err != nil {
		return nil
	}
	g := h.Group(fmt.Sprintf("elasticjob/bench-floor-%d", os.Getpid()))
	if err := g.Create(); err != nil {
		return nil
	}
	f := &floorCgroup{g: g, join: g.TasksFiles(), clone: g.CloneDir()}
	if h.Mode() == cgroups.V1 {
		if f.leave, err = h.SelfTasksFiles(""); err != nil {
			_ = g.Destroy(5 * time.Second)
			return nil
		}
	}
	return f
}

func (f *floorCgroup) close() {
	if f != nil {
		_ = f.g.Destroy(5 * time.Second)
	}
}

// run runs cmd to its end (in the cgroup when inCgroup) and returns its wall clock and CPU.
func (f *floorCgroup) run(inCgroup bool, cmd, env []string, dir string) (wall, cpu float64, err error) {
	if env == nil {
		env = os.Environ()
	}
	spec := process.Spec{Path: cmd[0], Args: cmd[1:], Dir: dir, Env: env,
		Stdout: filepath.Join(dir, "hand.out"), Stderr: filepath.Join(dir, "hand.err")}
	if inCgroup && f != nil {
		spec.Join, spec.Leave, spec.Cgroup = f.join, f.leave, f.clone
	}
	if p, err := exec.LookPath(cmd[0]); err == nil {
		spec.Path = p
	}
	t := time.Now()
	res, err := process.Run(context.Background(), spec, nil)
	wall = time.Since(t).Seconds()
	if err != nil {
		return 0, 0, err
	}
	if res.ExitCode != 0 {
		return 0, 0, fmt.Errorf("exit code %d: %s", res.ExitCode, res.Message())
	}
	return wall, res.CPU.Seconds(), nil
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

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
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

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
	triggers int           // the latency scenario's -triggers
	gap      time.Duration // and -gap
}
