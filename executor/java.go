package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ejcloud/elasticjob/jobs"
)

// Java jobs (sdk/java, docs/jobs.md "Coming from ElasticJob-Cloud"): the
// executor tells a Java app by what it runs, without a flag from the user,
// and puts the Java library (elasticjob-cloud-executor.jar, the original's
// public API over this executor's protocol) ahead of the app's own classes.

// Names of the Java library.
const (
	// JavaJarName is the library's file name (make java).
	JavaJarName = "elasticjob-cloud-executor.jar"
	// JavaRunner is its main class for a job that names its class:
	// java -cp <app jar> JavaRunner <jobClass> <sharding context>.
	JavaRunner = "com.github.ejcloud.elasticjob.runtime.Runner"
	// JavaImageJar is where images hold the library (the JRE image, make
	// java-image); the executor looks there after its own directory.
	JavaImageJar = "/usr/share/elasticjob/" + JavaJarName
)

// Environment of a Java job's process (read by the Java library).
const (
	EnvJavaToolOptions = "JAVA_TOOL_OPTIONS"
	EnvJobProps        = "ELASTICJOB_JOB_PROPS"
	EnvJobClass        = "ELASTICJOB_JOB_CLASS"
	EnvBeanName        = "ELASTICJOB_BEAN_NAME"
	EnvAppContext      = "ELASTICJOB_APPLICATION_CONTEXT"
)

// Java is how the executor runs Java apps.
type Java struct {
	// Jar is the Java library; "" when this host has none: a Java app's
	// tasks then fail saying so.
	Jar string
	// Cmd is the java command for the JVMs the executor starts itself (a
	// jar app, a job class): default $JAVA_HOME/bin/java, else java on PATH.
	Cmd string
	// Opts are JVM flags for those JVMs (the app's own start script keeps
	// its flags).
	Opts []string
}

// FindJavaJar is the Java library this executor uses: configured (which
// must exist), else the one beside the executor binary in exeDir, else
// JavaImageJar; "" when there is none.
func FindJavaJar(configured, exeDir string) (string, error) {
	if configured != "" {
		if st, err := os.Stat(configured); err != nil || st.IsDir() {
			return "", fmt.Errorf("java jar %s: not a file (build it with make java)", configured)
		}
		return filepath.Abs(configured)
	}
	candidates := []string{JavaImageJar}
	if exeDir != "" {
		candidates = append([]string{filepath.Join(exeDir, JavaJarName)}, candidates...)
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", nil
}

// javaKind is how a task's process runs on a JVM.
type javaKind int

const (
	notJava    javaKind = iota
	javaTool            // the app's own start script or command line starts the JVM: JAVA_TOOL_OPTIONS
	javaJar             // the bootstrap is a jar: java -jar
	javaRunner          // the bootstrap is a jar and the job names its class: the library's runner
)

func (k javaKind) String() string {
	return [...]string{"not Java", "a JVM its script starts", "a jar", "a job class"}[k]
}

// javaFacts are what tells a Java task, gathered from the app.
type javaFacts struct {
	commandLine string // the script command line, when that is what runs
	script      []byte // the head of the bootstrap script, when it is a text file
	isJar       bool   // the bootstrap file is a jar
	appJars     bool   // the app holds jars (at its top or in lib/)
	originalJar bool   // one of them is the original's elasticjob-cloud-executor
	class       bool   // the job names a Java class or a Spring bean
}

// needsLibrary reports whether a Java task cannot run without the library:
// it names its class, or it holds the original's executor, whose
// JobBootstrap needs Mesos. Other Java apps (or apps that merely ship a
// jar) run as they are on a host without it.
func (f javaFacts) needsLibrary(kind javaKind) bool {
	return kind == javaRunner || f.class || f.originalJar
}

// originalExecutor matches the file names of the original's executor jar
// (3.x elasticjob-cloud-executor-3.0.1.jar, 2.x elastic-job-cloud-executor-2.1.5.jar).
var originalExecutor = regexp.MustCompile(`^elastic-?job-cloud-executor-[0-9].*\.jar$`)

// javaWord matches java run as a command: java, /usr/bin/java,
// "$JAVA_HOME/bin/java", exec java; not javac, java.lang or Foo.java.
var javaWord = regexp.MustCompile("(^|[\\s;&|(`'\"/=}])java($|[\\s;&|)`'\"])")

// classifyJava decides how a task runs: a command line or script that
// starts java, or an app holding jars, is a JVM the script starts; a jar
// bootstrap is run by java -jar, or by the runner when the job names its
// class; a job class with a start script is the 2.x shape (its main calls
// JobBootstrap.execute(), which reads the class from the environment).
func classifyJava(f javaFacts) javaKind {
	switch {
	case strings.TrimSpace(f.commandLine) != "":
		if javaWord.MatchString(f.commandLine) {
			return javaTool
		}
		return notJava
	case f.isJar && f.class:
		return javaRunner
	case f.isJar:
		return javaJar
	case f.class, f.appJars, javaWord.Match(f.script):
		return javaTool
	}
	return notJava
}

// javaFactsOf reads the facts of a task's command from the app.
func javaFactsOf(cmd command, commandLine string, job jobs.Config) javaFacts {
	f := javaFacts{commandLine: commandLine, class: job.JavaClass() != "" || job.BeanName != ""}
	if strings.TrimSpace(commandLine) != "" || cmd.script == "" {
		return f
	}
	head := readHead(cmd.script, 64<<10)
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")) || strings.HasSuffix(cmd.script, ".jar"):
		f.isJar = true
	case !bytes.HasPrefix(head, []byte("\x7fELF")):
		f.script = head
	}
	for _, pattern := range []string{"*.jar", "lib/*.jar", "libs/*.jar"} {
		m, _ := filepath.Glob(filepath.Join(cmd.dir, pattern))
		for _, jar := range m {
			f.appJars = true
			f.originalJar = f.originalJar || originalExecutor.MatchString(filepath.Base(jar))
		}
	}
	return f
}

func readHead(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}

// errNoJavaJar is the cause of a Java task on a host without the library.
var errNoJavaJar = errors.New("the executor on this host has no " + JavaJarName +
	" (the Java library): build it with make java and put it beside the executor binary, or set ELASTICJOB_JAVA_JAR")

// apply makes cmd and env run the task as kind says: the library ahead of
// the app's classes (-Xbootclasspath/a for java -jar and, through
// JAVA_TOOL_OPTIONS, for a JVM the app's script starts; first on the class
// path for the runner's JVM), the job's class, bean and props in the
// environment.
func (jv Java) apply(kind javaKind, required bool, cmd command, env []string, job jobs.Config, ctxJSON string) (command, []string, error) {
	if kind == notJava {
		return cmd, env, nil
	}
	if jv.Jar == "" && required {
		return cmd, env, fmt.Errorf("the app runs Java (%s) but %w", kind, errNoJavaJar)
	}
	if jv.Jar == "" {
		return cmd, env, nil // a Java app that does not need the library runs as it is
	}
	if strings.ContainsAny(jv.Jar, " \t\n:") {
		return cmd, env, fmt.Errorf("the Java library's path %q has a blank or a colon, which JVM options cannot carry", jv.Jar)
	}
	props, err := json.Marshal(job.Props)
	if err != nil {
		return cmd, env, err
	}
	env = append(env, EnvJobProps+"="+string(props))
	if c := job.JavaClass(); c != "" {
		env = append(env, EnvJobClass+"="+c)
	}
	if job.BeanName != "" {
		env = append(env, EnvBeanName+"="+job.BeanName, EnvAppContext+"="+job.ApplicationContext)
	}
	boot := "-Xbootclasspath/a:" + jv.Jar
	if kind == javaTool {
		return cmd, setEnv(env, EnvJavaToolOptions, strings.TrimSpace(getEnv(env, EnvJavaToolOptions)+" "+boot)), nil
	}
	args := append([]string(nil), jv.Opts...)
	if kind == javaJar {
		// java -jar takes its class path from the jar alone: the library goes on the boot
		// class path, ahead of it.
		args = append(append(append(args, boot, "-jar", cmd.script), cmd.words...), ctxJSON)
	} else {
		// The runner's JVM is ours to start: the library first on the class path puts its
		// classes ahead of the app's (a copy of the original's among them) as the boot class
		// path would, without what appending to the boot class path costs every JVM: the
		// JDK's archived module graph goes unused (class-data sharing's "optimized module
		// handling"), ≈ 12 ms of CPU at each start (docs/benchmarks.md, Java jobs).
		cp := jv.Jar + ":" + cmd.script
		if st, err := os.Stat(filepath.Join(cmd.dir, "lib")); err == nil && st.IsDir() {
			cp += ":" + filepath.Join(cmd.dir, "lib", "*")
		}
		args = append(args, "-cp", cp, JavaRunner, job.JavaClass(), ctxJSON)
	}
	return command{path: jv.command(env), args: args, dir: cmd.dir, script: cmd.script, words: cmd.words}, env, nil
}

// command is the java binary: Cmd, else $JAVA_HOME/bin/java, else java.
func (jv Java) command(env []string) string {
	if jv.Cmd != "" {
		return jv.Cmd
	}
	if h := getEnv(env, "JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

// getEnv is the last value of name in env ("" when unset).
func getEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// setEnv sets name in env, dropping its other entries.
func setEnv(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
