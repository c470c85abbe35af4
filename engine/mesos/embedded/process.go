package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// inheritedEnv are the variables of this process an executor inherits.
var inheritedEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR", "USER", "JAVA_HOME"}

// executorEnv is the environment a real agent gives a custom executor,
// followed by the variables of its CommandInfo (which win).
func (c *Cluster) executorEnv(e *executor) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	grace := e.gracePeriod(c.cfg.ExecutorShutdownGrace)
	checkpoint, backoff := "0", 2*time.Second
	if e.ck != nil {
		// The agent recovers it: it keeps its tasks for the recovery
		// timeout and retries often enough to re-register in time.
		checkpoint = "1"
		backoff = min(backoff, c.cfg.ExecutorReregistrationTimeout/5)
		env = append(env, "MESOS_RECOVERY_TIMEOUT="+mesosDuration(c.cfg.RecoveryTimeout))
	}
	env = append(env,
		"MESOS_AGENT_ENDPOINT="+c.hostPort,
		"MESOS_FRAMEWORK_ID="+e.fw.id,
		"MESOS_EXECUTOR_ID="+e.id,
		"MESOS_DIRECTORY="+e.dir,
		"MESOS_SANDBOX="+e.dir,
		"MESOS_CHECKPOINT="+checkpoint,
		"MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD="+mesosDuration(grace),
		"MESOS_SUBSCRIPTION_BACKOFF_MAX="+mesosDuration(backoff),
		"MESOS_SLAVE_ID="+e.agent.id,
		"MESOS_AGENT_ID="+e.agent.id,
		"MESOS_SLAVE_PID=slave(1)@"+c.hostPort,
		"MESOS_HTTP_COMMAND_EXECUTOR=0",
		"MESOS_CONTAINER_ID="+e.containerID,
		// Our executor speaks protobuf to this agent when told so (a Mesos
		// agent does not tell it: JSON there): both ends have the same
		// protos, and protobuf costs this process a fraction of JSON's
		// decoding of every update and encoding of every event. Executors
		// that do not know the variable speak JSON, served as before.
		"ELASTICJOB_AGENT_CODEC=protobuf",
	)
	env = append(env, c.iso.env(e)...)
	for _, v := range e.info.GetCommand().GetEnvironment().GetVariables() {
		if v.Type == nil || *v.Type == mesos.Environment_Variable_VALUE {
			env = append(env, v.Name+"="+v.GetValue())
		}
	}
	return env
}

// runExecutor prepares the sandbox, fetches URIs, starts the process and
// waits for it.
func (c *Cluster) runExecutor(e *executor, env []string) {
	cmd, err := c.prepare(e, env)
	if err == nil {
		err = c.startProcess(e, cmd)
	}
	if err != nil {
		c.mu.Lock()
		e.containerGone = true
		c.mu.Unlock()
		c.iso.destroy(e)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.log.Warn("executor launch failed", "executor_id", e.id, "err", err)
		if e.state != execTerminating {
			e.reason = mesos.REASON_CONTAINER_LAUNCH_FAILED
		}
		c.executorTerminated(e, nil, "Failed to launch container: "+err.Error())
		return
	}
	// What the executor left in its process group is killed while it is
	// a zombie: once reaped, its pid, the group's id, is free for any
	// process (another team's, the host's) to take.
	unreaped := awaitExit(cmd.Process.Pid)
	c.mu.Lock()
	if unreaped {
		e.signalGroup(syscall.SIGKILL)
	}
	e.exited = true
	c.mu.Unlock()
	werr := cmd.Wait()
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	c.mu.Lock()
	detached, limitation := e.detached, e.limitation
	e.containerGone = !detached
	c.mu.Unlock()
	if detached {
		return // the agent stopped and left it running: its next run recovers its end
	}
	msg := c.destroyContainer(e, exitMessage(ws, werr))
	if limitation != "" {
		msg = limitation
	}
	status := int32(ws)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.executorTerminated(e, &status, msg)
}

// signalGroup sends sig to the process group e's executor leads, only
// while its pid names it. An executor never started has no pid (kill(2)
// of group 0 would signal this process's own group); one that has exited
// may have been reaped, its pid taken by any process, which may lead a
// group of the same id. A recovered executor is not this process's child
// (another reaps it): its pid must still name the process checkpointed.
// Called with the cluster's lock held.
func (e *executor) signalGroup(sig syscall.Signal) {
	if e.pid <= 0 || e.exited || (e.recovered && !sameProcess(e.proc)) {
		return
	}
	_ = syscall.Kill(-e.pid, sig)
}

// destroyContainer kills whatever the ended executor left (its process
// group, its tasks' groups, its cgroup), dates its sandbox for GC and
// returns msg with an out-of-memory kill named.
func (h *host) destroyContainer(e *executor, msg string) string {
	// Nothing of the executor survives it, neither its own process group
	// (killed before it was reaped, runExecutor) nor its tasks' groups.
	if n := reap(e.dir, false, nil); n > 0 {
		h.log.Warn("killed processes the executor left behind", "executor_id", e.id, "processes", n)
	}
	if oom := h.iso.oomMessage(e); oom != "" {
		msg = "Executor terminated: " + oom + " (" + strings.TrimPrefix(msg, "Executor terminated: ") + ")"
	}
	h.iso.destroy(e)
	now := h.cfg.Clock.Now() // the sandbox's age counts from here (GC)
	_ = os.Chtimes(e.dir, now, now)
	return msg
}

// prepare creates the sandbox, fetches the command URIs and builds the
// command (without starting it).
func (h *host) prepare(e *executor, env []string) (*exec.Cmd, error) {
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, err
	}
	latest := filepath.Join(filepath.Dir(e.dir), "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(e.containerID, latest)
	command := e.info.GetCommand()
	if command == nil {
		return nil, errors.New("executor has no command")
	}
	for _, u := range command.URIs {
		if err := fetchURI(u, e.dir); err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u.Value, err)
		}
	}
	cmd, err := buildCommand(command, e.dir)
	if err != nil {
		return nil, err
	}
	if h.ten != nil {
		more, err := h.ten.confine(e, cmd)
		if err != nil {
			return nil, fmt.Errorf("tenant isolation: %w", err)
		}
		env = append(env, more...) // after CommandInfo's: these win
	}
	if e.cgroup != nil && e.cgroup.Child("executor").CloneDir() == "" {
		// The executor starts through a /bin/sh prelude that joins the
		// cgroup; check here what exec would otherwise report.
		if _, err := exec.LookPath(cmd.Path); err != nil {
			return nil, err
		}
		argv := h.iso.argv(e, append([]string{cmd.Path}, cmd.Args[1:]...))
		cmd.Path, cmd.Args = argv[0], argv // argv[0] of a shell=false command becomes its path
	}
	cmd.Env = env
	cmd.Dir = e.dir
	cmd.SysProcAttr = sysProcAttr(e.ck != nil, h.ten != nil)
	return cmd, nil
}

// buildCommand follows Mesos: shell=true (default) runs "/bin/sh -c value";
// shell=false execs value with arguments as its full argv.
func buildCommand(ci *mesos.CommandInfo, dir string) (*exec.Cmd, error) {
	value := ci.GetValue()
	if value == "" {
		return nil, errors.New("command value is empty")
	}
	if ci.Shell == nil || *ci.Shell {
		return exec.Command("/bin/sh", "-c", value), nil
	}
	path := value
	if strings.Contains(value, "/") && !filepath.IsAbs(value) {
		path = filepath.Join(dir, value)
	} else if !strings.Contains(value, "/") {
		p, err := exec.LookPath(value)
		if err != nil {
			return nil, err
		}
		path = p
	}
	args := ci.Arguments
	if len(args) == 0 {
		args = []string{value}
	}
	return &exec.Cmd{Path: path, Args: args}, nil
}

// startProcess starts cmd with stdout/stderr in the sandbox, unless the
// executor was shut down while it was being prepared.
func (h *host) startProcess(e *executor, cmd *exec.Cmd) error {
	stdout, err := os.OpenFile(filepath.Join(e.dir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(e.dir, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stderr.Close()
	if e.uid != 0 {
		_ = stdout.Chown(e.uid, e.uid)
		_ = stderr.Chown(e.uid, e.uid)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	h.lock.Lock()
	defer h.lock.Unlock()
	if e.state == execTerminating {
		return errors.New("executor was shut down before it started")
	}
	if e.cgroup != nil { // v2: started right in its cgroup (else the prelude joins it)
		done, err := startIn(cmd, e.cgroup.Child("executor").CloneDir())
		if err != nil {
			return err
		}
		defer done()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	e.pid = cmd.Process.Pid
	if e.ck != nil {
		start, _ := procStart(e.pid)
		e.proc = forked{Pid: e.pid, Start: start, Boot: h.boot, Token: e.token.String()}
		e.ck.forked(e, e.proc)
	}
	h.after(e, h.cfg.ExecutorRegistrationTimeout, func() { h.registrationTimeout(e) })
	return nil
}

func (h *host) registrationTimeout(e *executor) {
	if e.state != execLaunching {
		return
	}
	h.log.Warn("executor did not subscribe in time; killing it", "executor_id", e.id,
		"timeout", h.cfg.ExecutorRegistrationTimeout)
	e.reason = mesos.REASON_EXECUTOR_REGISTRATION_TIMEOUT
	e.state = execTerminating
	e.signalGroup(syscall.SIGKILL)
}
