package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/executor/extract"
	"github.com/ejcloud/elasticjob/executor/fetch"
	"github.com/ejcloud/elasticjob/executor/process"
	taskstate "github.com/ejcloud/elasticjob/task"
)

// PodSettings configure the executor in a Kubernetes pod (pod mode: no Mesos agent). The
// scheduler's Kubernetes engine sets them in the pod's environment.
type PodSettings struct {
	TaskID, ExecutorID, Node string
	TaskData                 []byte
	ReportURLs               []string // scheduler base URLs, tried in turn
	Token                    string   // proves the reports are this task's
	Sandbox                  string   // an emptyDir: the app, the task's output
	MemLimitMB               int64    // the pod's memory limit, for the OOM message
	KillGrace                time.Duration
	FetchTimeout             time.Duration
	MaxDownload              int64
	MaxExtracted             int64
	LogLevel                 slog.Level
}

// ParsePodSettings reads the pod's environment.
func ParsePodSettings(getenv func(string) string) (PodSettings, error) {
	s := PodSettings{
		TaskID: getenv("ELASTICJOB_TASK_ID"), ExecutorID: getenv("ELASTICJOB_EXECUTOR_ID"), Node: getenv("ELASTICJOB_NODE_NAME"),
		TaskData: []byte(getenv("ELASTICJOB_TASK_DATA")), Token: getenv("ELASTICJOB_REPORT_TOKEN"),
		Sandbox: firstOf(getenv("ELASTICJOB_SANDBOX"), "/elasticjob"), MaxDownload: 1 << 30, MaxExtracted: 4 << 30,
	}
	var errs []error
	for _, u := range strings.Split(getenv("ELASTICJOB_REPORT_URLS"), ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			s.ReportURLs = append(s.ReportURLs, u)
		}
	}
	if s.TaskID == "" || len(s.TaskData) == 0 || len(s.ReportURLs) == 0 {
		errs = append(errs, errors.New("ELASTICJOB_TASK_ID, ELASTICJOB_TASK_DATA and ELASTICJOB_REPORT_URLS must be set (pod mode runs in a pod the scheduler created)"))
	}
	if v := getenv("ELASTICJOB_MEMORY_LIMIT_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		errs = append(errs, prefix("ELASTICJOB_MEMORY_LIMIT_MB", err))
		s.MemLimitMB = n
	}
	var err error
	s.KillGrace, err = parseDuration(firstOf(getenv("ELASTICJOB_KILL_GRACE"), "5s"))
	errs = append(errs, prefix("ELASTICJOB_KILL_GRACE", err))
	s.FetchTimeout, err = parseDuration(firstOf(getenv("ELASTICJOB_FETCH_TIMEOUT"), "10m"))
	errs = append(errs, prefix("ELASTICJOB_FETCH_TIMEOUT", err))
	errs = append(errs, prefix("ELASTICJOB_LOG_LEVEL", s.LogLevel.UnmarshalText([]byte(firstOf(getenv("ELASTICJOB_LOG_LEVEL"), "info")))))
	return s, errors.Join(errs...)
}

// PodMain runs one task in a pod: it fetches the app, runs the job (once, or on its cron
// for a DAEMON job), reports the task's states and a daemon's runs straight to the
// scheduler, and exits 0 when the task finished (ExitError otherwise). SIGTERM (the pod
// deleted) kills the job with the kill grace. The job's output goes to the task's files
// and, as it is written, to the container's stdout and stderr (kubectl logs, pods/log).
func PodMain(ctx context.Context, env []string, stdout, stderr io.Writer) error {
	s, err := ParsePodSettings(lookup(env))
	if err != nil {
		return err
	}
	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr} // the log and the job's output share them
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: max(s.LogLevel, slog.LevelWarn)})).With("executor", s.ExecutorID, "task", s.TaskID)
	cache := filepath.Join(s.Sandbox, "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	pipeline := &Pipeline{
		Fetcher: &fetch.Fetcher{CacheDir: cache, ScratchDir: filepath.Join(s.Sandbox, "fetch"), MaxSize: s.MaxDownload,
			Timeout: s.FetchTimeout, Log: log.With("subsystem", "fetch")},
		Limits:  extract.Limits{MaxBytes: s.MaxExtracted, MaxEntries: 100_000},
		Sandbox: s.Sandbox, Env: env, Grace: s.KillGrace, Log: log.With("subsystem", "task"),
	}
	if pipeline.Java, err = javaOf(lookup(env)("ELASTICJOB_JAVA_JAR"), strings.Fields(lookup(env)("ELASTICJOB_JAVA_OPTS"))); err != nil {
		return err
	}
	rep := newPodReporter(s, log)
	defer rep.close()
	out := runPodTask(ctx, s, pipeline, rep, stdout, stderr)
	if out.State != Finished {
		return &ExitError{State: out.State, Message: out.Message}
	}
	return nil
}

// ExitError is PodMain's error for a task that did not finish: the container exits non-zero.
type ExitError struct {
	State   State
	Message string
}

func (e *ExitError) Error() string { return "task " + e.State.String() + ": " + e.Message }

// runPodTask runs the task and reports it; it returns once its final state is reported (or
// could not be).
func runPodTask(ctx context.Context, s PodSettings, p *Pipeline, rep *podReporter, stdout, stderr io.Writer) Outcome {
	launched := time.Now()
	host, ip := hostIdentity()
	p.Hostname, p.IP = host, ip
	var forked, started time.Time
	dir := taskDirOf(s.Sandbox, s.TaskID)
	follow := startFollowing(dir, stdout, stderr)
	ooms := oomKills()
	taskCtx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-ctx.Done() // SIGTERM: the pod is being deleted
		cancel(process.Kill{Grace: s.KillGrace})
	}()
	out := p.Run(taskCtx, s.TaskID, s.TaskData, Hooks{
		Forking: func() { forked = time.Now() },
		Running: func() {
			started = time.Now()
			r := Report{Hostname: host, IP: ip, LaunchTime: &launched, StartTime: &started}
			if !forked.IsZero() {
				r.ForkTime = &forked
			}
			rep.send(engine.ExecutorReport{State: taskstate.Running, Data: r.marshal()})
		},
		Message: func(data []byte) { rep.send(engine.ExecutorReport{Data: data}) },
	})
	follow.stop()
	if out.State == Failed && oomKills() > ooms {
		out.Message = fmt.Sprintf("memory limit of %d MB exceeded: %s", s.MemLimitMB, out.Message)
	}
	now := time.Now()
	r := Report{Hostname: host, IP: ip, CompleteTime: &now, ExitCode: out.ExitCode, Outputs: out.Outputs}
	if !started.IsZero() {
		r.StartTime = &started
	}
	rep.send(engine.ExecutorReport{State: taskstate.State(terminal[out.State].String()), Message: out.Message, Data: r.marshal(),
		Stdout: process.Tail(filepath.Join(dir, "stdout"), 0, tailBytes), Stderr: process.Tail(filepath.Join(dir, "stderr"), 0, tailBytes)})
	rep.flush(finalReportWait)
	return out
}

// tailBytes is how much of each stream the final report carries (the scheduler keeps it
// once the pod is gone).
const tailBytes = 64 << 10

// finalReportWait bounds the wait for the scheduler to take the final report; the pod's
// phase tells it otherwise.
const finalReportWait = 2 * time.Minute

// oomKills counts the OOM kills in this container's memory cgroup (cgroup v1 or v2).
func oomKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
	}
	return 0
}

// InstallMain copies this executor to dst (the init container of an app with its own image
// puts it into the shared volume), and the Java library it would use, when it has one, beside
// it: the executor finds the library beside its binary, so an app image that holds a JRE runs
// Java jobs without a copy of the library of its own.
func InstallMain(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	jar, err := FindJavaJar("", filepath.Dir(self))
	if err != nil {
		return err
	}
	return install(self, jar, dst)
}

// install copies the executor self to dst and the Java library jar ("" for none) into dst's
// directory.
func install(self, jar, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := copyFile(self, dst, 0o755); err != nil {
		return fmt.Errorf("install the executor at %s: %w", dst, err)
	}
	if jar == "" {
		return nil
	}
	if err := copyFile(jar, filepath.Join(filepath.Dir(dst), JavaJarName), 0o644); err != nil {
		return fmt.Errorf("install the Java library beside the executor: %w", err)
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// lockedWriter serializes writes (the executor's log and the job's copied output).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
