package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/executor/extract"
	"github.com/ejcloud/elasticjob/executor/fetch"
	"github.com/ejcloud/elasticjob/executor/process"
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
	// when it never started or ended by a signal); reported to the
	// scheduler in the status update's data (see Report).
	ExitCode *int
}

// Runner runs one task to completion. Cancelling ctx kills the task; a
// process.Kill cause carries the grace period.
type Runner interface {
	Run(ctx context.Context, taskID string, data []byte, running func()) Outcome
}

// Pipeline is the Runner of ElasticJob tasks: fetch the app, extract it,
// run the bootstrap script or script.command.line. It knows nothing of Mesos.
type Pipeline struct {
	Fetcher *fetch.Fetcher
	Limits  extract.Limits
	Sandbox string        // $MESOS_SANDBOX
	Env     []string      // the executor's environment, passed on to tasks
	Grace   time.Duration // kill grace when ctx ends without a process.Kill cause
	Log     *slog.Logger
}

var _ Runner = (*Pipeline)(nil)

// Run runs one task. running is called once the process has started.
func (p *Pipeline) Run(ctx context.Context, taskID string, data []byte, running func()) Outcome {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("task", taskID)
	td, err := jobs.UnmarshalTaskData(data)
	if err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	app, err := p.prepare(ctx, td)
	if err != nil {
		return p.failure(ctx, err)
	}
	spec, err := p.spec(app, td, taskID)
	if err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	log.Info("starting task", "cmd", spec.Path, "dir", spec.Dir)
	res, err := process.Run(ctx, spec, func(int) { running() })
	if err != nil {
		return p.failure(ctx, fmt.Errorf("start %s: %w", spec.Path, err))
	}
	log.Info("task ended", "exit", res.ExitCode, "signal", res.Signal, "killed", res.Killed)
	var code *int
	if res.ExitCode >= 0 {
		code = &res.ExitCode
	}
	switch {
	case res.Killed:
		return Outcome{State: Killed, Message: "killed", ExitCode: code}
	case res.Message() != "":
		return Outcome{State: Failed, Message: res.Message(), ExitCode: code}
	}
	return Outcome{State: Finished, ExitCode: code}
}

// prepare fetches and extracts the app.
func (p *Pipeline) prepare(ctx context.Context, td jobs.TaskData) (extract.Result, error) {
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

// spec builds the process to run, its output files and environment.
func (p *Pipeline) spec(app extract.Result, td jobs.TaskData, taskID string) (process.Spec, error) {
	sc := td.ShardingContext
	if sc.TaskID == "" {
		sc.TaskID = taskID
	}
	ctxJSON, err := json.Marshal(sc)
	if err != nil {
		return process.Spec{}, err
	}
	cmd, err := buildCommand(app, td.App.BootstrapScript, td.Job.Props["script.command.line"], string(ctxJSON))
	if err != nil {
		return process.Spec{}, err
	}
	dir := filepath.Join(p.Sandbox, "tasks", strings.ReplaceAll(taskID, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return process.Spec{}, err
	}
	env := append(append([]string(nil), p.Env...),
		"ELASTICJOB_JOB_NAME="+sc.JobName,
		"ELASTICJOB_TASK_ID="+taskID,
		"ELASTICJOB_SHARDING_TOTAL_COUNT="+strconv.Itoa(sc.ShardingTotalCount),
		"ELASTICJOB_SHARDING_ITEM="+strconv.Itoa(sc.ShardingItem),
		"ELASTICJOB_SHARDING_PARAMETER="+sc.ShardingParameter,
		"ELASTICJOB_JOB_PARAMETER="+sc.JobParameter,
		"ELASTICJOB_SHARDING_CONTEXT="+string(ctxJSON),
		"ELASTICJOB_EXECUTION_SOURCE="+string(td.ExecutionSource),
	)
	return process.Spec{
		Path: cmd.path, Args: cmd.args, Dir: cmd.dir, Env: env, Grace: p.Grace,
		Stdout: filepath.Join(dir, "stdout"), Stderr: filepath.Join(dir, "stderr"),
	}, nil
}
