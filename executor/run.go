package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/executor/process"
	"github.com/ejcloud/elasticjob/jobs"
)

// job is what one run of a task does: a process forked per run
// (processJob), a call to a resident SDK process (residentJob) or an HTTP
// request (httpJob).
type job interface {
	// run runs the job once; ctx ending kills the run (a process.Kill
	// cause carries the grace period).
	run(ctx context.Context, r runReq) Outcome
	// close releases what the job holds once the task ends.
	close()
}

// runReq is one run.
type runReq struct {
	id      string // run id: "1", "2", … within a daemon task; "1" for a transient task
	source  jobs.ExecutionSource
	started func() // called once the run has started; may be nil
	forking func() // called just before a process is started; may be nil
}

func (r runReq) start() {
	if r.started != nil {
		r.started()
	}
}

// errTimedOut is the cause of a run's context ending at timeoutSeconds.
var errTimedOut = errors.New("run timed out")

// runOnce runs j once under the job's timeout and error handler.
func runOnce(ctx context.Context, j job, r runReq, cfg jobs.Config) Outcome {
	if r.id == "" {
		r.id = "1"
	}
	out := runTimed(ctx, j, r, time.Duration(cfg.TimeoutSeconds)*time.Second)
	return applyHandler(out, cfg.JobErrorHandlerType)
}

// runTimed runs j with a time limit (none when d ≤ 0): a run still going
// at the limit is killed (SIGTERM, SIGKILL after the grace period; an HTTP
// request is cancelled) and fails with "timed out after d".
func runTimed(ctx context.Context, j job, r runReq, d time.Duration) Outcome {
	if d <= 0 {
		return j.run(ctx, r)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, d, errTimedOut)
	defer cancel()
	out := j.run(rctx, r)
	if out.State != Finished && ctx.Err() == nil && errors.Is(context.Cause(rctx), errTimedOut) {
		return Outcome{State: Failed, Message: fmt.Sprintf("timed out after %v", d), ExitCode: out.ExitCode}
	}
	return out
}

// applyHandler applies jobErrorHandlerType: IGNORE turns a failed run into
// a success whose message keeps the cause; the other handlers (LOG, THROW,
// WEBHOOK, which the scheduler sends) leave a failure a failure.
func applyHandler(out Outcome, handler string) Outcome {
	if out.State == Failed && handler == jobs.HandlerIgnore {
		out.State, out.Message = Finished, "ignored failure: "+out.Message
	}
	return out
}

// processJob forks the app's bootstrap script or the script command line
// for every run.
type processJob struct {
	cmd     command
	env     []string // without ELASTICJOB_EXECUTION_SOURCE, which is per run
	dir     string   // the task's directory: stdout and stderr
	ctxJSON string   // the sharding context
	grace   time.Duration
	groups  Groups      // may be nil
	cg      *taskCgroup // the task's cgroup; nil: none
	java    javaKind    // how it runs on a JVM (java.go), if it does
}

func (j *processJob) spec(source jobs.ExecutionSource) process.Spec {
	env := append(append([]string(nil), j.env...), "ELASTICJOB_EXECUTION_SOURCE="+string(source))
	return j.cg.wrap(process.Spec{
		Path: j.cmd.path, Args: j.cmd.args, Dir: j.cmd.dir, Env: env, Grace: j.grace,
		Stdout: filepath.Join(j.dir, "stdout"), Stderr: filepath.Join(j.dir, "stderr"),
	})
}

func (j *processJob) run(ctx context.Context, r runReq) Outcome {
	pid := 0
	if r.forking != nil {
		r.forking()
	}
	_ = os.Remove(causeFile(j.dir)) // what an earlier run of a daemon task wrote
	res, err := process.Run(ctx, j.spec(r.source), func(p int) { pid = p; watchGroup(j.groups, p); r.start() })
	unwatchGroup(j.groups, pid)
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{State: Killed, Message: "killed before the run started"}
		}
		return Outcome{State: Failed, Message: fmt.Sprintf("start %s: %v", j.cmd.path, err)}
	}
	return j.cg.explain(processOutcome(withCause(res, j.dir)))
}

// EnvCauseFile names a file a job's process may write its failure cause
// to (the Java library writes the exception and the top of its stack): a
// run that fails reports that instead of the tail of its stderr.
const EnvCauseFile = "ELASTICJOB_CAUSE_FILE"

// causeFile is the task's cause file.
func causeFile(dir string) string { return filepath.Join(dir, "cause") }

// withCause puts what the process wrote to its cause file in place of its
// stderr tail when it failed.
func withCause(res process.Result, dir string) process.Result {
	if res.Message() == "" || res.Killed {
		return res
	}
	if c := process.Tail(causeFile(dir), 0, 4096); c != "" {
		res.StderrTail = c
	}
	return res
}

func (j *processJob) close() { j.cg.destroy() }

// processOutcome maps how a process ended to an Outcome.
func processOutcome(res process.Result) Outcome {
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
