package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/executor/extract"
	"github.com/ejcloud/elasticjob/executor/fetch"
	"github.com/ejcloud/elasticjob/jobs"
)

// State is how a task ended, independent of Mesos.
type State int

const (
	Finished State = iota
	Failed
	Killed
)

func (s State) String() string { return [...]string{"FINISHED", "FAILED", "KILLED"}[s] }

// Outcome is a task's end state and the message reported with it.
type Outcome struct {
	State   State
	Message string
	// ExitCode is the process's exit status when it ran and exited (nil
	// when it never started, ended by a signal or was not a process);
	// reported to the scheduler in the status update's data (see Report).
	ExitCode *int
	// Outputs are the key=value lines the run wrote to $ELASTICJOB_OUTPUT
	// (outputs.go), reported with the terminal status.
	Outputs map[string]string
}

// Hooks are how a running task talks back to the Mesos side.
type Hooks struct {
	// Running is called once the job has started (TASK_RUNNING).
	Running func()
	// Forking, if set, is called just before a TRANSIENT task's process
	// is started (the fork and exec that Running follows).
	Forking func()
	// Message sends a framework message (a daemon run report).
	Message func(data []byte)
	// Resources are the task's resources (TaskInfo.resources): the limits
	// of its cgroup when the Pipeline has TaskCgroups.
	Resources Resources
}

// Runner runs one task to completion. Cancelling ctx kills the task; a
// process.Kill cause carries the grace period.
type Runner interface {
	Run(ctx context.Context, taskID string, data []byte, h Hooks) Outcome
}

// Pipeline is the Runner of ElasticJob tasks: fetch the app, extract it,
// and run the job by its type (the bootstrap script, a script command line
// or an HTTP call), once for a TRANSIENT task or on the job's cron for a
// DAEMON task. It knows nothing of Mesos.
type Pipeline struct {
	Fetcher *fetch.Fetcher
	Limits  extract.Limits
	Sandbox string        // $MESOS_SANDBOX
	Env     []string      // the executor's environment, passed on to tasks
	Grace   time.Duration // kill grace when ctx ends without a process.Kill cause
	Log     *slog.Logger
	// Clock drives daemon crons (default: the system clock).
	Clock clock.Clock
	// Hostname and IP go into daemon run reports (default: this host's).
	Hostname, IP string
	// Groups is told of every job process group (the Reaper); may be nil.
	Groups Groups
	// Cgroups, when set, runs each task's processes in a cgroup of their
	// own with the task's limits (see TaskCgroups); nil: no cgroups.
	Cgroups *TaskCgroups
	// TaskGC, when set, removes old directories of finished tasks from the
	// sandbox as tasks end.
	TaskGC *TaskGC
	// Java runs Java apps (java.go): the library's path, the java command.
	Java Java
	// Secrets fetches a task's secrets from the scheduler (secrets.go).
	Secrets SecretsClient

	hostOnce sync.Once
}

var _ Runner = (*Pipeline)(nil)

// Run runs one task: one run of a TRANSIENT job, or a DAEMON job's cron
// until ctx ends.
func (p *Pipeline) Run(ctx context.Context, taskID string, data []byte, h Hooks) Outcome {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("task", taskID)
	p.TaskGC.begin(taskID)
	defer p.TaskGC.end(p.Sandbox, taskID, log)
	td, err := jobs.UnmarshalTaskData(data)
	if err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	if td.ShardingContext.TaskID == "" {
		td.ShardingContext.TaskID = taskID
	}
	defer os.RemoveAll(secretsDirOf(taskDirOf(p.Sandbox, taskID))) // the task's secret files end with it
	j, err := p.newJob(ctx, td, taskID, h.Resources, log)
	if err != nil {
		return p.failure(ctx, err)
	}
	defer j.close()
	if td.Job.JobExecutionType == jobs.Daemon {
		return p.daemon(ctx, td, j, h, log)
	}
	res := runOnce(ctx, j, runReq{source: td.ExecutionSource, started: h.Running, forking: h.Forking}, td.Job)
	res = collectOutputs(taskDirOf(p.Sandbox, taskID), res)
	log.Info("run ended", "state", res.State.String(), "message", res.Message)
	return res
}

// newJob prepares what each run of the task runs: an HTTP call, or a
// process of the fetched and extracted app (forked per run, or resident
// and driven over the SDK line protocol for a DAEMON job that asks for it).
func (p *Pipeline) newJob(ctx context.Context, td jobs.TaskData, taskID string, res Resources, log *slog.Logger) (job, error) {
	dir := taskDirOf(p.Sandbox, taskID)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { // the usual case: tasks/ exists
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	// The task's own scratch directory ($ELASTICJOB_TASK_DIR): the working
	// directory is the app's unpacked package, shared by every shard and
	// run on this agent, so two shards writing report.txt there collide.
	if err := os.Mkdir(scratchDir(dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	ctxJSON, err := json.Marshal(td.ShardingContext)
	if err != nil {
		return nil, err
	}
	if td.Job.JobType == jobs.TypeHTTP {
		return newHTTPJob(td.Job.Props, string(ctxJSON), dir)
	}
	var app extract.Result
	switch {
	case td.App.AppURL == "" && td.App.ContainerImage != "":
		app = extract.Result{Dir: "/"} // the app is the pod's image: its bootstrap script is a path in it
	case td.App.AppURL != "" || td.Job.JobType != jobs.TypeScript:
		if app, err = p.prepare(ctx, td); err != nil {
			return nil, err
		}
	}
	pj, err := p.processJob(app, td, taskID, string(ctxJSON), dir)
	if err != nil {
		return nil, err
	}
	secretEnv, err := p.deliverSecrets(ctx, td, taskID, dir)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	pj.env = append(pj.env, secretEnv...)
	pj.cg = p.Cgroups.open(taskID, res)
	if td.Job.JobExecutionType == jobs.Daemon {
		switch {
		case td.Job.Props[PropSDKProtocol] == SDKProtocolLine:
			return newResidentJob(ctx, pj, log)
		case pj.java != notJava && strings.TrimSpace(td.Job.Props["script.command.line"]) == "":
			// The Java library speaks the protocol: one JVM per task, without
			// asking the user for sdk.protocol=line (see residentJob.auto).
			return newAutoResidentJob(ctx, pj, log), nil
		}
	}
	return pj, nil
}

// prepare fetches and extracts the app.
func (p *Pipeline) prepare(ctx context.Context, td jobs.TaskData) (extract.Result, error) {
	if td.App.AppURL == "" {
		return extract.Result{}, fmt.Errorf("app %s has no appURL: upload its package (PUT /api/app/%s/package) or set its appURL",
			td.App.AppName, td.App.AppName)
	}
	blob, err := p.Fetcher.Fetch(ctx, td.App.AppURL, td.App.AppCacheEnable)
	if err != nil {
		return extract.Result{}, err
	}
	defer blob.Release()
	pkg := extract.Package{File: blob.File, Size: blob.Size, SHA256: blob.SHA256, Name: path.Base(blob.URL.Path)}
	return extract.Extract(ctx, pkg, filepath.Join(p.Sandbox, "apps"), p.Limits)
}

func (p *Pipeline) failure(ctx context.Context, err error) Outcome {
	if ctx.Err() != nil {
		return Outcome{State: Killed, Message: "killed before the task started"}
	}
	return Outcome{State: Failed, Message: err.Error()}
}

// processJob builds the process a run starts, its output files and
// environment.
func (p *Pipeline) processJob(app extract.Result, td jobs.TaskData, taskID, ctxJSON, dir string) (*processJob, error) {
	sc := td.ShardingContext
	line := td.Job.Props["script.command.line"]
	if td.Job.JobType == jobs.TypeScript && strings.TrimSpace(line) == "" {
		return nil, fmt.Errorf("SCRIPT job %s has no props.script.command.line", td.Job.JobName)
	}
	cmd, err := buildCommand(app, td.App.BootstrapScript, line, ctxJSON)
	if err != nil {
		return nil, err
	}
	facts := javaFactsOf(cmd, line, td.Job)
	kind := classifyJava(facts)
	if p.Java.Jar == "" && !facts.needsLibrary(kind) {
		kind = notJava // runs as it is (java.go)
	}
	env := append(append([]string(nil), p.Env...),
		"ELASTICJOB_JOB_NAME="+sc.JobName,
		"ELASTICJOB_NAMESPACE="+cmp.Or(sc.Namespace, "default"),
		"ELASTICJOB_TASK_ID="+taskID,
		EnvTaskDir+"="+scratchDir(dir),
		"ELASTICJOB_SHARDING_TOTAL_COUNT="+strconv.Itoa(sc.ShardingTotalCount),
		"ELASTICJOB_SHARDING_ITEM="+strconv.Itoa(sc.ShardingItem),
		"ELASTICJOB_SHARDING_PARAMETER="+sc.ShardingParameter,
		"ELASTICJOB_JOB_PARAMETER="+sc.JobParameter,
		"ELASTICJOB_SHARDING_CONTEXT="+ctxJSON,
		"ELASTICJOB_EXECUTION_TYPE="+string(td.Job.JobExecutionType),
		"ELASTICJOB_STREAMING_PROCESS="+strconv.FormatBool(td.Job.Props["streaming.process"] == "true"),
		jobs.OutputEnv+"="+outputFile(dir),
		EnvCauseFile+"="+causeFile(dir),
	)
	if td.Term != nil {
		env = append(env, "ELASTICJOB_LEADER_TERM="+strconv.FormatInt(*td.Term, 10))
	}
	if !td.Queued.IsZero() {
		env = append(env, "ELASTICJOB_QUEUED_AT="+td.Queued.UTC().Format(time.RFC3339Nano))
	}
	if !td.Nominal.IsZero() {
		env = append(env, "ELASTICJOB_NOMINAL_AT="+td.Nominal.UTC().Format(time.RFC3339Nano))
	}
	if sc.ScheduledTime != "" {
		env = append(env, EnvScheduledTime+"="+sc.ScheduledTime)
	}
	env = append(env, sc.Inputs.Env()...)
	if cmd, env, err = p.Java.apply(kind, facts.needsLibrary(kind), cmd, env, td.Job, ctxJSON); err != nil {
		return nil, err
	}
	return &processJob{cmd: cmd, env: env, dir: dir, ctxJSON: ctxJSON, grace: p.Grace, groups: p.Groups, java: kind}, nil
}

// EnvTaskDir names the task's scratch directory, tasks/<task id>/work in
// the sandbox: the place a task writes its files, its own, kept and
// collected with the task's directory (its stdout and stderr beside it).
const EnvTaskDir = "ELASTICJOB_TASK_DIR"

func scratchDir(taskDir string) string { return filepath.Join(taskDir, "work") }

// EnvScheduledTime is the nominal instant a backfill's run stands for
// (RFC 3339, UTC); unset for other runs.
const EnvScheduledTime = "ELASTICJOB_SCHEDULED_TIME"

// taskDirOf is a task's directory in the sandbox: stdout, stderr, output.
func taskDirOf(sandbox, taskID string) string {
	return filepath.Join(sandbox, "tasks", safeName(taskID))
}

// safeName is a task id as a directory name.
func safeName(taskID string) string { return strings.ReplaceAll(taskID, "/", "_") }

// host returns the hostname and address for daemon reports.
func (p *Pipeline) host() (string, string) {
	p.hostOnce.Do(func() {
		if p.Hostname == "" || p.IP == "" {
			h, ip := hostIdentity()
			p.Hostname, p.IP = firstOf(p.Hostname, h), firstOf(p.IP, ip)
		}
	})
	return p.Hostname, p.IP
}
