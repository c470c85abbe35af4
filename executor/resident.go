package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/executor/process"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/sdk"
)

// The job prop that makes a DAEMON job's process resident: the executor
// starts it once per task and sends it each run over the SDK's line
// protocol (package sdk) instead of forking a process per cron fire.
const (
	PropSDKProtocol = "sdk.protocol"
	SDKProtocolLine = "line"
)

// residentJob keeps one process of the app for a daemon task and sends it a
// RUN line per run; a process that died is started again at the next run.
type residentJob struct {
	pj      *processJob
	taskCtx context.Context
	log     *slog.Logger
	proc    *residentProc // nil when none runs
	// auto: resident because the app is Java (java.go), not because the
	// job asked (sdk.protocol=line). The process starts at the first run,
	// and one that ends without having said a word of the protocol is a
	// program that does not use the Java library: its exit is the run's
	// outcome, and later runs fork a process each (fork).
	auto, fork bool
}

var _ job = (*residentJob)(nil)

// residentProc is one resident process.
type residentProc struct {
	spoke  atomic.Bool // it wrote a protocol line
	pid    int
	in     *os.File           // RUN and CANCEL lines (the process's fd 3)
	lines  chan string        // DONE lines (its fd 4); closed at end of file
	done   chan struct{}      // closed once the process has ended
	res    process.Result     // how it ended, once done
	cancel context.CancelFunc // kills it (with the task's grace)
}

// newAutoResidentJob keeps a Java app's JVM resident, started at the first
// run (see residentJob.auto).
func newAutoResidentJob(ctx context.Context, pj *processJob, log *slog.Logger) *residentJob {
	return &residentJob{pj: pj, taskCtx: ctx, log: log, auto: true}
}

// newResidentJob starts the process at once, so that it is warm for the
// first run.
func newResidentJob(ctx context.Context, pj *processJob, log *slog.Logger) (*residentJob, error) {
	j := &residentJob{pj: pj, taskCtx: ctx, log: log}
	p, err := j.start()
	if err != nil {
		pj.close()
		return nil, err
	}
	j.proc = p
	return j, nil
}

func (j *residentJob) start() (*residentProc, error) {
	jobIn, runW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	doneR, jobOut, err := os.Pipe()
	if err != nil {
		jobIn.Close()
		runW.Close()
		return nil, err
	}
	spec := j.pj.spec(jobs.SourceNormal)
	spec.Env = append(spec.Env, sdk.EnvProtocol+"=1")
	spec.ExtraFiles = []*os.File{jobIn, jobOut} // fds 3 and 4
	pctx, cancel := context.WithCancelCause(j.taskCtx)
	p := &residentProc{in: runW, lines: make(chan string, 16), done: make(chan struct{}),
		cancel: func() { cancel(process.Kill{Grace: j.pj.grace}) }}
	started, failed := make(chan int, 1), make(chan error, 1)
	go func() {
		defer close(p.done)
		pid := 0
		res, err := process.Run(pctx, spec, func(p int) { pid = p; watchGroup(j.pj.groups, p); started <- p })
		unwatchGroup(j.pj.groups, pid)
		if err != nil {
			failed <- err
		}
		p.res = res
	}()
	var startErr error
	select {
	case p.pid = <-started:
	case startErr = <-failed:
	}
	jobIn.Close() // the child has its copies
	jobOut.Close()
	if startErr != nil {
		runW.Close()
		doneR.Close()
		cancel(nil)
		return nil, fmt.Errorf("start %s: %w", spec.Path, startErr)
	}
	go p.read(doneR)
	j.log.Info("resident job process started", "pid", p.pid)
	return p, nil
}

func (p *residentProc) read(r io.ReadCloser) {
	defer r.Close()
	defer close(p.lines)
	lr := sdk.NewLineReader(r, sdk.MaxLineBytes) // a job that never ends a line cannot fill our memory
	for {
		line, err := lr.Next()
		if err != nil {
			return
		}
		p.spoke.Store(true)
		p.lines <- line
	}
}

func (p *residentProc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// run sends RUN and waits for its DONE. When the run's time is up it sends
// CANCEL and, if the process does not answer within the grace period,
// kills it (the next run starts a new one).
func (j *residentJob) run(ctx context.Context, r runReq) Outcome {
	if j.fork {
		return j.pj.run(ctx, r)
	}
	if j.proc != nil && j.proc.ended() {
		j.log.Warn("resident job process had ended; starting it again", "pid", j.proc.pid, "how", j.proc.res.Message())
		j.proc = nil
	}
	if j.proc == nil {
		p, err := j.start()
		if err != nil {
			if ctx.Err() != nil {
				return Outcome{State: Killed, Message: "killed before the run started"}
			}
			return Outcome{State: Failed, Message: err.Error()}
		}
		j.proc = p
	}
	p := j.proc
	stderr := filepath.Join(j.pj.dir, "stderr")
	var from int64
	if st, err := os.Stat(stderr); err == nil {
		from = st.Size()
	}
	if _, err := io.WriteString(p.in, sdk.FormatRun(r.id, []byte(j.pj.ctxJSON))); err != nil {
		return j.ended(ctx, p, from)
	}
	r.start()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return j.ended(ctx, p, from)
			}
			id, success, failure, valid := sdk.ParseDone(line)
			switch {
			case !valid:
				j.log.Warn("resident job process wrote a bad protocol line", "line", line)
			case id != r.id: // a late answer to a cancelled run
			case success:
				return Outcome{State: Finished}
			default:
				return Outcome{State: Failed, Message: failure}
			}
		case <-ctx.Done():
			if j.taskCtx.Err() != nil { // the task is being killed, and the process with it
				<-p.done
				j.proc = nil
				return Outcome{State: Killed, Message: "killed"}
			}
			return j.cancelRun(p, r.id)
		}
	}
}

// cancelRun asks the process to stop a run whose time is up and waits the
// grace period for its answer before killing the process.
func (j *residentJob) cancelRun(p *residentProc, id string) Outcome {
	_, _ = io.WriteString(p.in, sdk.FormatCancel(id))
	t := time.NewTimer(j.pj.grace)
	defer t.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				j.ended(context.Background(), p, 0)
				return Outcome{State: Killed, Message: "killed"}
			}
			if got, _, _, _ := sdk.ParseDone(line); got == id {
				return Outcome{State: Killed, Message: "cancelled"}
			}
		case <-t.C:
			j.log.Warn("resident job process ignored CANCEL; killing it", "pid", p.pid, "run", id)
			p.cancel()
			<-p.done
			j.proc = nil
			return Outcome{State: Killed, Message: "killed"}
		}
	}
}

// ended reports a run the process did not answer because it ended (or
// closed its end of the protocol), quoting what it wrote to stderr since
// offset from.
func (j *residentJob) ended(ctx context.Context, p *residentProc, from int64) Outcome {
	t := time.NewTimer(j.pj.grace)
	select {
	case <-p.done:
	case <-t.C:
		p.cancel()
		<-p.done
	}
	t.Stop()
	j.proc = nil
	if ctx.Err() != nil {
		return Outcome{State: Killed, Message: "killed"}
	}
	res := p.res
	res.StderrTail = process.Tail(filepath.Join(j.pj.dir, "stderr"), from, process.TailSize)
	res = withCause(res, j.pj.dir)
	if j.auto && !p.spoke.Load() {
		j.fork = true
		j.log.Info("the app's JVM does not use the Java library's protocol: its exit is the run's outcome, and each run starts a JVM", "pid", p.pid)
		return j.pj.cg.explain(processOutcome(res))
	}
	msg := "job process ended during the run: " + firstOf(res.Message(), fmt.Sprintf("exit code %d", res.ExitCode))
	var code *int
	if p.res.ExitCode >= 0 {
		code = &p.res.ExitCode
	}
	return j.pj.cg.explain(Outcome{State: Failed, Message: msg, ExitCode: code})
}

// close ends the process: end of file on its protocol input asks it to
// exit; it is killed after the grace period (at once when the task was
// killed: the task's context kills it).
func (j *residentJob) close() {
	defer j.pj.close()
	p := j.proc
	if p == nil {
		return
	}
	j.proc = nil
	p.in.Close()
	t := time.NewTimer(j.pj.grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.cancel()
		<-p.done
	}
}
