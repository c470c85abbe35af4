package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/sysfile"
)

// TailSize is how much of the end of stderr a failure message quotes.
const TailSize = 2048

// Spec is what to run.
type Spec struct {
	Path   string   // executable
	Args   []string // arguments after the executable
	Dir    string   // working directory
	Env    []string // complete environment
	Stdout string   // file that receives stdout (appended to)
	Stderr string   // file that receives stderr (appended to)
	Grace  time.Duration
	// ExtraFiles are inherited as fds 3, 4, … (exec.Cmd.ExtraFiles).
	ExtraFiles []*os.File
	// Cgroup is a cgroup v2 directory the process is started in
	// (clone3 CLONE_INTO_CGROUP: no migration afterwards); "" for none.
	Cgroup string
	// Join, with Leave, starts the process in a cgroup v1 group without a
	// helper: Join are the group's tasks files and Leave those of the
	// caller's own group. The forking thread moves itself into the group,
	// forks (the child is born there: nothing runs outside it), and moves
	// back (see startJoined).
	Join, Leave []string
}

// Kill is the cancellation cause that asks for a kill with its own grace
// period (context.WithCancelCause). Any other cancellation uses Spec.Grace.
type Kill struct{ Grace time.Duration }

func (k Kill) Error() string { return fmt.Sprintf("kill requested (grace %v)", k.Grace) }

// Result is how the process ended.
type Result struct {
	ExitCode   int            // -1 when ended by a signal
	Signal     syscall.Signal // the terminating signal, if any
	Killed     bool           // we killed it because ctx ended
	StderrTail string         // up to TailSize bytes from the end of what this run wrote to stderr
	CPU        time.Duration  // user + system CPU time of the process (its waited-for children included)
}

// Message describes a failure: "exit code 3: <stderr tail>" or
// "terminated by signal SIGSEGV: <stderr tail>"; "" for success.
func (r Result) Message() string {
	var m string
	switch {
	case r.Killed:
		m = "killed"
	case r.Signal != 0:
		m = "terminated by signal " + SignalName(r.Signal)
	case r.ExitCode != 0:
		m = fmt.Sprintf("exit code %d", r.ExitCode)
	default:
		return ""
	}
	if r.StderrTail != "" {
		m += ": " + r.StderrTail
	}
	return m
}

// Run starts spec, calls started with the pid once it runs, and waits. When
// ctx ends the process group is killed and Result.Killed is set. The error is
// non-nil only when the process could not be started.
func Run(ctx context.Context, spec Spec, started func(pid int)) (Result, error) {
	cmd, from, err := start(spec)
	if err != nil {
		return Result{}, err
	}
	pid := cmd.Process.Pid
	if started != nil {
		started(pid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var res Result
	select {
	case <-done:
	case <-ctx.Done():
		res.Killed = true
		killGroup(pid, grace(ctx, spec.Grace), done)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.ExitCode = ws.ExitStatus()
	res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ws.Signaled() {
		res.Signal = ws.Signal()
	}
	res.StderrTail = Tail(spec.Stderr, from, TailSize)
	return res, nil
}

// start starts the process; from is the size stderr had before it, so that
// the failure message quotes only this run's output (daemon runs append to
// the same files).
func start(spec Spec) (cmd *exec.Cmd, from int64, err error) {
	stdout, err := os.OpenFile(spec.Stdout, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(spec.Stderr, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer stderr.Close()
	if st, err := stderr.Stat(); err == nil {
		from = st.Size()
	}
	cmd = exec.Command(spec.Path, spec.Args...)
	cmd.Dir, cmd.Env, cmd.ExtraFiles = spec.Dir, spec.Env, spec.ExtraFiles
	// Files, not pipes: a grandchild holding the output open cannot make
	// Wait hang, and nothing is buffered in the executor.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.Cgroup != "" {
		dir, err := os.Open(spec.Cgroup)
		if err != nil {
			return nil, 0, fmt.Errorf("cgroup: %w", err)
		}
		defer dir.Close() // the child has started in it once Start returns
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
	}
	if len(spec.Join) > 0 {
		err = startJoined(cmd, spec.Join, spec.Leave)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, 0, err
	}
	return cmd, from, nil
}

// startJoined starts cmd from a thread of its own that is in the cgroup v1
// group whose tasks files are join: a child inherits the forking thread's
// groups, so it is in the group before it runs anything, without the cost
// of an exec'd helper that moves itself. Writing 0 to a tasks file moves
// the writing thread alone (no process-wide migration lock). The thread
// then moves back to leave. Should that fail, the thread must not run other
// goroutines from inside the task's group: it stays locked, and the Go
// runtime ends it when this goroutine ends; the child, which PDEATHSIG
// would kill with that thread anyway, is killed and reaped now, and the
// start fails.
func startJoined(cmd *exec.Cmd, join, leave []string) error {
	runtime.LockOSThread()
	// "0" is the writing thread itself: the kernel then skips the global
	// cgroup_threadgroup_rwsem, whose write side waits for an RCU grace
	// period (~10 ms) and which an explicit thread id would take.
	const self = "0"
	err := writeEach(join, self)
	if err == nil {
		err = cmd.Start()
	} else {
		err = fmt.Errorf("cgroup: join: %w", err)
	}
	if lerr := writeEach(leave, self); lerr != nil {
		if err == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return fmt.Errorf("cgroup: move the executor's thread back: %w", lerr)
	}
	runtime.UnlockOSThread()
	return err
}

// writeEach writes value to each file, stopping at the first failure.
func writeEach(files []string, value string) error {
	for _, f := range files {
		if err := sysfile.Write(f, value, false); err != nil {
			return fmt.Errorf("write %s: %w", value, err)
		}
	}
	return nil
}

func grace(ctx context.Context, def time.Duration) time.Duration {
	var k Kill
	if errors.As(context.Cause(ctx), &k) {
		return k.Grace
	}
	return def
}

// Tail returns up to n bytes from the end of a file, after offset from, as
// trimmed, valid UTF-8 ("" when the file cannot be read).
func Tail(path string, from, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-n, from, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}
