package executor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/javatest"
	"github.com/ejcloud/elasticjob/jobs"
)

func TestClassifyJava(t *testing.T) {
	cases := []struct {
		name string
		f    javaFacts
		want javaKind
	}{
		{"shell script", javaFacts{script: []byte("#!/bin/sh\necho hi\n")}, notJava},
		{"exec java", javaFacts{script: []byte("#!/bin/sh\nexec java -cp \"lib/*\" com.example.MyJobDemo\n")}, javaTool},
		{"JAVA_HOME", javaFacts{script: []byte(`"$JAVA_HOME/bin/java" -Xmx64m -jar app.jar`)}, javaTool},
		{"java at the start", javaFacts{script: []byte("java -jar x.jar")}, javaTool},
		{"javac is not java", javaFacts{script: []byte("#!/bin/sh\njavac Foo.java\necho java.lang\n")}, notJava},
		{"an app with jars", javaFacts{script: []byte("#!/bin/sh\n$JAVA_CMD -cp lib/* Main\n"), appJars: true}, javaTool},
		{"a jar", javaFacts{isJar: true}, javaJar},
		{"a jar and a class", javaFacts{isJar: true, class: true}, javaRunner},
		{"2.x start script and a class", javaFacts{script: []byte("#!/bin/sh\n./run\n"), class: true}, javaTool},
		{"command line", javaFacts{commandLine: "echo hi", isJar: true, class: true}, notJava},
		{"command line starting java", javaFacts{commandLine: "java -cp app.jar Main"}, javaTool},
	}
	for _, c := range cases {
		if got := classifyJava(c.f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// FindJavaJar: a configured path must exist; else the one beside the
// executor binary.
func TestFindJavaJar(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindJavaJar(filepath.Join(dir, "missing.jar"), ""); err == nil {
		t.Fatal("a missing configured jar was accepted")
	}
	jar := filepath.Join(dir, JavaJarName)
	os.WriteFile(jar, []byte("PK"), 0o644)
	if got, err := FindJavaJar("", dir); err != nil || got != jar {
		t.Fatalf("beside the binary: %q %v", got, err)
	}
}

// javaApp packs files (name → host path of its content, or literal text
// for .sh) as a tar.gz app.
func javaApp(t *testing.T, files map[string]string) string {
	t.Helper()
	var ents []tarEnt
	for name, src := range files {
		body := src
		if !strings.HasSuffix(name, ".sh") {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			body = string(b)
		}
		ents = append(ents, tarEnt{name: name, body: body, mode: 0o755})
	}
	return tgzURL(t, ents...)
}

// javaPipeline runs Java apps with the library built from sdk/java.
func javaPipeline(t *testing.T, b javatest.Built) *Pipeline {
	p := newPipeline(t)
	p.Java = Java{Jar: b.Lib}
	p.Grace = 2 * time.Second
	return p
}

func javaTask(url, bootstrap string, item int, param string, job jobs.Config) []byte {
	job.JobName, job.AppName, job.ShardingTotalCount = "job", "app", 3
	if job.JobExecutionType == "" {
		job.JobExecutionType = jobs.Transient
	}
	return jobs.TaskData{
		Version: jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: "job@-@" + string(rune('0'+item)) + "@-@READY@-@agent-1@-@u",
			ShardingTotalCount: 3, ShardingItem: item, ShardingParameter: param, JobParameter: job.JobParameter},
		ExecutionSource: jobs.SourceNormal,
		Job:             job,
		App:             app.Config{AppName: "app", AppURL: url, BootstrapScript: bootstrap, AppCacheEnable: true},
	}.Marshal()
}

// recorded reads the lines the test jobs appended for a shard:
// "item parameter total taskId pid api".
func recorded(t *testing.T, dir string, item int) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, string(rune('0'+item))+".log"))
	if err != nil {
		t.Fatalf("shard %d recorded nothing: %v", item, err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

// Each way a Java job is written runs its shard with the shard's context,
// once, through the executor, on a real JVM.
func TestJavaJobTypes(t *testing.T) {
	b := javatest.Build(t)
	start := "#!/bin/sh\ncd \"$(dirname \"$0\")/..\"\nexec java -cp \"lib/*\" %s \"$@\"\n"
	cases := []struct {
		name, bootstrap string
		files           map[string]string
		job             jobs.Config
		api             string
		lines           int
	}{
		{name: "the manual's MyJobDemo from its start script", bootstrap: "bin/start.sh",
			files: map[string]string{"bin/start.sh": strings.Replace(start, "%s", "ejtest.MyJobDemo", 1), "lib/ejtest.jar": b.AppJar},
			api:   "3.x", lines: 1},
		{name: "the guide's jar and jobClass", bootstrap: "ejtest.jar",
			files: map[string]string{"ejtest.jar": b.AppJar}, job: jobs.Config{JobClass: "ejtest.MyJob"}, api: "3.x", lines: 1},
		{name: "a 2.x job class with the 2.x JobBootstrap.execute()", bootstrap: "bin/start.sh",
			files: map[string]string{"bin/start.sh": strings.Replace(start, "%s", "ejtest.LegacyMain", 1), "lib/ejtest.jar": b.AppJar},
			job:   jobs.Config{JobType: jobs.TypeSimple, JobClass: "ejtest.LegacyJob"}, api: "2.x", lines: 1},
		{name: "a streaming dataflow job", bootstrap: "bin/start.sh",
			files: map[string]string{"bin/start.sh": strings.Replace(start, "%s", "ejtest.FlowJob", 1), "lib/ejtest.jar": b.AppJar},
			job:   jobs.Config{Props: map[string]string{"streaming.process": "true"}}, api: "dataflow", lines: 3},
		{name: "a one-off dataflow job", bootstrap: "ejtest.jar",
			files: map[string]string{"ejtest.jar": b.AppJar}, job: jobs.Config{JobType: jobs.TypeDataflow, JobClass: "ejtest.FlowJob"}, api: "dataflow", lines: 1},
		{name: "an unchanged tarball built against the original's jars", bootstrap: "bin/start.sh",
			files: originalFiles(t, b), api: "original", lines: 1},
		{name: "the guide's fat jar holding the original's classes, and jobClass", bootstrap: "fat.jar",
			files: map[string]string{"fat.jar": originalFatJar(t, b)}, job: jobs.Config{JobClass: "com.example.MyJob"}, api: "original", lines: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			c.job.JobParameter = out
			p := javaPipeline(t, b)
			res := p.Run(t.Context(), "job@-@1@-@READY@-@agent-1@-@u", javaTask(javaApp(t, c.files), c.bootstrap, 1, "Shanghai", c.job), Hooks{})
			if res.State != Finished {
				t.Fatalf("%+v\nstderr:\n%s", res, readFile(t, filepath.Join(p.Sandbox, "tasks", "job@-@1@-@READY@-@agent-1@-@u", "stderr")))
			}
			lines := recorded(t, out, 1)
			if len(lines) != c.lines {
				t.Fatalf("recorded %v, want %d lines", lines, c.lines)
			}
			l := lines[0]
			want := []string{"1", "Shanghai", "3", "job@-@1@-@READY@-@agent-1@-@u"}
			if c.api == "dataflow" {
				want[1] = "batch1"
			}
			if strings.Join(l[:4], " ") != strings.Join(want, " ") || l[5] != c.api {
				t.Fatalf("recorded %v, want %v … %s", l, want, c.api)
			}
		})
	}
}

// originalFiles is the app built against the original's jars, unchanged.
func originalFiles(t *testing.T, b javatest.Built) map[string]string {
	files := map[string]string{"bin/start.sh": javatest.StartScript}
	jars, _ := filepath.Glob(filepath.Join(b.OriginalApp, "lib", "*.jar"))
	for _, j := range jars {
		files["lib/"+filepath.Base(j)] = j
	}
	return files
}

// originalFatJar is the app built against the original's jars as one fat jar (the practice
// guide's jarPath): the job's classes and the original's (stand-ins), which the library's
// must come before.
func originalFatJar(t *testing.T, b javatest.Built) string {
	dir := t.TempDir()
	jars, _ := filepath.Glob(filepath.Join(b.OriginalApp, "lib", "*.jar"))
	for _, j := range jars {
		cmd := exec.Command("jar", "xf", j)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("jar xf %s: %v\n%s", j, err, out)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "META-INF")); err != nil {
		t.Fatal(err)
	}
	fat := filepath.Join(t.TempDir(), "fat.jar")
	javatest.MakeJar(t, dir, fat, "")
	return fat
}

// The stand-ins fail as the original does without Mesos: the app is only
// right with the library ahead of them.
func TestOriginalStandInsNeedMesos(t *testing.T) {
	b := javatest.Build(t)
	cmd := exec.Command("sh", filepath.Join(b.OriginalApp, "bin", "start.sh"))
	cmd.Env = append(os.Environ(), "ELASTICJOB_SHARDING_CONTEXT={}")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "UnsatisfiedLinkError") || !strings.Contains(string(out), "mesos") {
		t.Fatalf("the original's stand-in ran without Mesos: %v\n%s", err, out)
	}
}

// A job that throws fails its shard with the exception's message and the
// top of its stack as the cause, not the tail of a stack trace.
func TestJavaFailureCause(t *testing.T) {
	b := javatest.Build(t)
	for _, c := range []struct {
		name, bootstrap string
		files           map[string]string
		job             jobs.Config
	}{
		{"from a start script", "bin/start.sh", map[string]string{
			"bin/start.sh": "#!/bin/sh\nexec java -cp lib/ejtest.jar ejtest.MyJobDemo\n", "lib/ejtest.jar": b.AppJar}, jobs.Config{}},
		{"a job class", "ejtest.jar", map[string]string{"ejtest.jar": b.AppJar}, jobs.Config{JobClass: "ejtest.MyJob"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.job.JobParameter = t.TempDir()
			res := javaPipeline(t, b).Run(t.Context(), "t", javaTask(javaApp(t, c.files), c.bootstrap, 2, "fail", c.job), Hooks{})
			want := regexp.MustCompile(`^exit code 1: java.lang.IllegalStateException: no rows for shard 2\n\tat ejtest.MyJob.execute\(MyJob.java:\d+\)$`)
			if res.State != Failed || !want.MatchString(res.Message) || res.ExitCode == nil || *res.ExitCode != 1 {
				t.Fatalf("%+v\nmessage:\n%s", res, res.Message)
			}
		})
	}
	t.Run("a class that is not in the jar", func(t *testing.T) {
		job := jobs.Config{JobClass: "com.example.Missing", JobParameter: t.TempDir()}
		res := javaPipeline(t, b).Run(t.Context(), "t", javaTask(javaApp(t, map[string]string{"ejtest.jar": b.AppJar}), "ejtest.jar", 0, "", job), Hooks{})
		if res.State != Failed || !strings.Contains(res.Message, "Class 'com.example.Missing' is not on the class path of the app") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("no library on this host", func(t *testing.T) {
		p := javaPipeline(t, b)
		p.Java.Jar = ""
		job := jobs.Config{JobClass: "ejtest.MyJob", JobParameter: t.TempDir()}
		res := p.Run(t.Context(), "t", javaTask(javaApp(t, map[string]string{"ejtest.jar": b.AppJar}), "ejtest.jar", 0, "", job), Hooks{})
		if res.State != Failed || !strings.Contains(res.Message, "the app runs Java (a job class) but the executor on this host has no elasticjob-cloud-executor.jar") {
			t.Fatalf("%+v", res)
		}
		res = p.Run(t.Context(), "t2", javaTask(javaApp(t, originalFiles(t, b)), "bin/start.sh", 0, "", jobs.Config{}), Hooks{})
		if res.State != Failed || !strings.Contains(res.Message, "the app runs Java (a JVM its script starts) but the executor on this host has no") {
			t.Fatalf("the original's jars without the library: %+v", res)
		}
	})
}

// A DAEMON Java job registered as the manual registers it (no props) keeps
// one JVM: every cron tick runs execute in it, each reported; a throw fails
// that tick only; the kill ends the JVM.
func TestJavaDaemonIsResident(t *testing.T) {
	b := javatest.Build(t)
	clk := clock.NewFake(epoch)
	p := javaPipeline(t, b)
	p.Clock = clk
	out := t.TempDir()
	url := javaApp(t, originalFiles(t, b)) // the unchanged tarball
	d := startDaemon(t, p, clk, daemonData(url, "bin/start.sh", jobs.Config{JobParameter: out}))
	for i := range 3 {
		if c := d.fire(t); !c.Success || c.RunID != string(rune('1'+i)) {
			t.Fatalf("tick %d: %+v", i+1, c)
		}
	}
	lines := recorded(t, out, 1)
	if len(lines) != 3 || lines[0][4] != lines[1][4] || lines[1][4] != lines[2][4] {
		t.Fatalf("not one JVM across the ticks: %v", lines)
	}
	pid := lines[0][4]
	if o := d.kill(t); o.State != Killed {
		t.Fatalf("%+v", o)
	}
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the JVM %s outlived its task", pid)
	}
}

// A DAEMON job whose JVM does not use the library (a plain Java program)
// still runs once per tick: its exit is the tick's outcome.
func TestJavaDaemonWithoutTheLibraryForksPerTick(t *testing.T) {
	b := javatest.Build(t)
	plain := javatest.Compile(t, map[string]string{"Plain.java": `public class Plain {
    public static void main(String[] args) throws Exception {
        String pid = java.lang.management.ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        java.nio.file.Files.write(java.nio.file.Paths.get(System.getenv("ELASTICJOB_JOB_PARAMETER"), "1.log"),
            ("1 plain 2 t " + pid + " plain\n").getBytes(), java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    }
}
`})
	jar := filepath.Join(t.TempDir(), "plain.jar")
	javatest.MakeJar(t, plain, jar, "")
	clk := clock.NewFake(epoch)
	p := javaPipeline(t, b)
	p.Clock = clk
	out := t.TempDir()
	url := javaApp(t, map[string]string{"bin/start.sh": "#!/bin/sh\nexec java -cp lib/plain.jar Plain\n", "lib/plain.jar": jar})
	d := startDaemon(t, p, clk, daemonData(url, "bin/start.sh", jobs.Config{JobParameter: out}))
	for i := range 2 {
		if c := d.fire(t); !c.Success {
			t.Fatalf("tick %d: %+v", i+1, c)
		}
	}
	if lines := recorded(t, out, 1); len(lines) != 2 || lines[0][4] == lines[1][4] {
		t.Fatalf("want two runs in two JVMs: %v", lines)
	}
}

// LocalTaskExecutor runs a shard in the caller's JVM, as the original's;
// LOG prints a failure, THROW throws it.
func TestJavaLocalTaskExecutor(t *testing.T) {
	b := javatest.Build(t)
	out := t.TempDir()
	run := func(args ...string) (string, error) {
		o, err := exec.Command("java", append([]string{"-cp", b.AppJar + ":" + b.Lib, "ejtest.Local", out}, args...)...).CombinedOutput()
		return string(o), err
	}
	if o, err := run(); err != nil || !strings.Contains(o, "local done") {
		t.Fatalf("%v\n%s", err, o)
	}
	if l := recorded(t, out, 1); len(l) != 1 || strings.Join(l[0][:4], " ") != "1 b 3 local_job@-@1@-@READY@-@foo_slave_id@-@foo_uuid" {
		t.Fatalf("recorded %v", l)
	}
	if o, err := run("LOG", "2"); err != nil || !strings.Contains(o, "no rows for shard 2") || !strings.Contains(o, "local done") {
		t.Fatalf("LOG: %v\n%s", err, o)
	}
	if o, err := run("THROW", "2"); err == nil || !strings.Contains(o, "IllegalStateException: no rows for shard 2") || strings.Contains(o, "local done") {
		t.Fatalf("THROW: %v\n%s", err, o)
	}
}

// The 2.x LocalTaskExecutor (com.dangdang names) runs one shard of a SIMPLE,
// DATAFLOW or SCRIPT job in the caller's JVM with the shard's context, as the
// original's did (task id with foo_slave_id); a job's exception is printed
// by the default handler and the caller goes on.
func TestJavaLegacyLocalTaskExecutor(t *testing.T) {
	b := javatest.Build(t)
	out := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		o, err := exec.Command("java", append([]string{"-cp", b.AppJar + ":" + b.Lib, "ejtest.LegacyLocal", out}, args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(o), "local done") {
			t.Fatalf("%v: %v\n%s", args, err, o)
		}
		return string(o)
	}
	run("SIMPLE", "ejtest.LegacyJob", "1")
	if l := recorded(t, out, 1); len(l) != 1 || strings.Join(l[0][:4], " ") != "1 Shanghai 3 legacy_local@-@1@-@READY@-@foo_slave_id@-@foo_uuid" || l[0][5] != "2.x" {
		t.Fatalf("SIMPLE recorded %v", l)
	}
	if o := run("SIMPLE", "ejtest.LegacyJob", "2"); !strings.Contains(o, "Job 'legacy_local' exception occur in job processing") ||
		!strings.Contains(o, "java.lang.IllegalStateException: no rows for shard 2") {
		t.Fatalf("a throwing job: %s", o)
	}
	if o := run("SIMPLE", "ejtest.NoSuchJob", "0"); !strings.Contains(o, "Class 'ejtest.NoSuchJob' is not on the class path") {
		t.Fatalf("a missing class: %s", o)
	}
	run("DATAFLOW", "ejtest.LegacyFlowJob", "0")
	if l := recorded(t, out, 0); len(l) != 1 || l[0][1] != "batch1" || l[0][5] != "2.x-dataflow" {
		t.Fatalf("DATAFLOW recorded %v", l)
	}
	run("DATAFLOW", "ejtest.LegacyFlowJob", "0", "streaming")
	if l := recorded(t, out, 0); len(l) != 4 || l[3][1] != "batch3" {
		t.Fatalf("streaming DATAFLOW recorded %v", l)
	}
	script := filepath.Join(out, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf %s \"$1\" > \""+out+"/script.json\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("SCRIPT", script, "0")
	got, err := os.ReadFile(filepath.Join(out, "script.json"))
	if err != nil || !strings.Contains(string(got), `"shardingItem":0`) || !strings.Contains(string(got), `"shardingParameter":"Beijing"`) ||
		!strings.Contains(string(got), `"jobParameter":"`+out+`"`) {
		t.Fatalf("SCRIPT got %q (%v)", got, err)
	}
}

// springJars are Debian's Spring context jars (libspring-context-java) and
// what they need, or nil when they are not installed.
func springJars(t *testing.T) []string {
	var out []string
	for _, n := range []string{"spring3-core", "spring3-beans", "spring3-context", "spring3-aop", "spring3-expression", "commons-logging"} {
		p := "/usr/share/java/" + n + ".jar"
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: scripts/services.sh install puts in libspring-context-java", p)
			}
			t.Skipf("%s is missing (apt-get install libspring-context-java)", p)
		}
		out = append(out, p)
	}
	return out
}

// The 2.x beanName and applicationContext: the job is a bean of a Spring XML
// context the app ships, with Spring's jars in its lib/ (Debian's Spring 4.3).
func TestJavaSpringBean(t *testing.T) {
	b := javatest.Build(t)
	files := map[string]string{"bin/start.sh": "#!/bin/sh\ncd \"$(dirname \"$0\")/..\"\nexec java -cp \"lib/*\" ejtest.LegacyMain\n", "lib/ejtest.jar": b.AppJar}
	for _, j := range springJars(t) {
		files["lib/"+filepath.Base(j)] = j
	}
	res := t.TempDir()
	os.WriteFile(filepath.Join(res, "jobs.xml"), []byte(`<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd">
    <bean id="legacyJob" class="ejtest.LegacyJob"/>
</beans>
`), 0o644)
	ctxJar := filepath.Join(t.TempDir(), "context.jar")
	javatest.MakeJar(t, res, ctxJar, "")
	files["lib/context.jar"] = ctxJar
	out := t.TempDir()
	job := jobs.Config{JobType: jobs.TypeSimple, JobClass: "ejtest.LegacyJob", BeanName: "legacyJob", ApplicationContext: "jobs.xml", JobParameter: out}
	p := javaPipeline(t, b)
	r := p.Run(t.Context(), "t", javaTask(javaApp(t, files), "bin/start.sh", 1, "Shanghai", job), Hooks{})
	if r.State != Finished {
		t.Fatalf("%+v", r)
	}
	if l := recorded(t, out, 1); len(l) != 1 || l[0][5] != "2.x" {
		t.Fatalf("recorded %v", l)
	}
	job.BeanName = "noSuchBean"
	r = p.Run(t.Context(), "t2", javaTask(javaApp(t, files), "bin/start.sh", 1, "Shanghai", job), Hooks{})
	if r.State != Failed || !strings.Contains(r.Message, "NoSuchBeanDefinitionException: No bean named 'noSuchBean'") {
		t.Fatalf("%+v", r)
	}
}

// JobBootstrap.execute("HTTP") and ("SCRIPT"), the original's typed jobs: the job's props
// (http.uri as 3.0.x named it, script.command.line) reach the JVM, which calls the URL with
// the shard's context in the shardingContext header, or runs the line with it as the last
// argument.
func TestJavaTypedJobs(t *testing.T) {
	b := javatest.Build(t)
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + string(body) + " " + r.Header.Get("shardingContext")
		if r.URL.Path == "/fail" {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	files := map[string]string{"bin/start.sh": "#!/bin/sh\nexec java -cp lib/ejtest.jar ejtest.TypedMain HTTP\n", "lib/ejtest.jar": b.AppJar}
	job := jobs.Config{Props: map[string]string{"http.uri": srv.URL + "/ok", "http.method": "POST", "http.data": "hello"}}
	p := javaPipeline(t, b)
	if r := p.Run(t.Context(), "t", javaTask(javaApp(t, files), "bin/start.sh", 2, "Shanghai", job), Hooks{}); r.State != Finished {
		t.Fatalf("%+v", r)
	}
	if g := <-got; !strings.HasPrefix(g, "POST hello {") || !strings.Contains(g, `"shardingItem":2`) || !strings.Contains(g, `"shardingParameter":"Shanghai"`) {
		t.Fatalf("request %q", g)
	}
	job.Props["http.uri"] = srv.URL + "/fail"
	r := p.Run(t.Context(), "t2", javaTask(javaApp(t, files), "bin/start.sh", 2, "Shanghai", job), Hooks{})
	if r.State != Failed || !strings.Contains(r.Message, "503") || !strings.Contains(r.Message, "down for maintenance") {
		t.Fatalf("%+v", r)
	}
	// SCRIPT: the executor runs a script command line itself; a JVM that asks for it runs it too.
	out := filepath.Join(t.TempDir(), "ctx")
	cmd := exec.Command("java", "-Xbootclasspath/a:"+b.Lib, "-cp", b.AppJar, "ejtest.TypedMain", "SCRIPT")
	cmd.Env = append(os.Environ(), `ELASTICJOB_SHARDING_CONTEXT={"jobName":"j","shardingItem":1,"shardingTotalCount":2}`,
		`ELASTICJOB_JOB_PROPS={"script.command.line":"printf %s"}`)
	f, _ := os.Create(out)
	cmd.Stdout = f
	err := cmd.Run()
	f.Close()
	if b, _ := os.ReadFile(out); err != nil || !strings.HasPrefix(string(b), `{"jobName":"j",`) || !strings.Contains(string(b), `"shardingItem":1`) {
		t.Fatalf("SCRIPT: %v, printed %q", err, b)
	}
}
