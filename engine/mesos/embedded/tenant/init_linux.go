//go:build linux

package tenant

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init runs the tenant init when this process was started with EnvPlan
// set, and then never returns; otherwise it returns at once. A binary the
// agent names as Config.Tenancy.Init calls it first thing in main (a test
// binary in TestMain).
func Init() {
	v, ok := os.LookupEnv(EnvPlan)
	if !ok {
		return
	}
	// One P: the init's few goroutines need no second thread spinning
	// for work (about 0.2 ms of CPU per start, docs/benchmarks.md).
	runtime.GOMAXPROCS(1)
	// no_new_privs, the capability bounding set and the seccomp filter
	// are the thread's: the thread that sets them must be the one that
	// forks the executor (harden).
	runtime.LockOSThread()
	os.Exit(initMain(v, os.Stderr))
}

// Exit codes of Init's own failures (as a shell's: cannot run, not found).
const (
	exitSetup = 126
	exitStart = 127
)

func initMain(plan string, stderr io.Writer) int {
	p, err := Decode(plan)
	if err == nil && os.Getpid() != 1 {
		err = errors.New("tenant: init is not pid 1 of a new PID namespace")
	}
	if err == nil {
		err = setup(p)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tenant init:", err)
		return exitSetup
	}
	return supervise(p, stderr)
}

// setup builds the executor's view of the file system (see the package
// documentation).
func setup(p Plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make every mount private: %w", err)
	}
	// What is shown again is opened before /tmp or its parents are
	// hidden, and bound back from the open descriptor.
	shown := append(append([]string(nil), p.Show...), p.ReadOnly...)
	fds := make([]int, len(shown))
	for i, s := range shown {
		fd, err := unix.Open(s, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", s, err)
		}
		fds[i] = fd
	}
	for _, tmp := range Private {
		if st, err := os.Stat(tmp); err != nil || !st.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount a private %s: %w", tmp, err)
		}
	}
	var hidden []string
	for _, h := range hideOrder(p.Hide) {
		st, err := os.Stat(h)
		if errors.Is(err, fs.ErrNotExist) {
			continue // below /tmp, or gone
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		if st.IsDir() {
			err = unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=1m")
			hidden = append(hidden, h)
		} else {
			err = unix.Mount("/dev/null", h, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	for i, s := range shown {
		if err := os.MkdirAll(s, 0o755); err != nil { // parents inside a hiding tmpfs, or /tmp's
			return fmt.Errorf("show %s: %w", s, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fds[i]), s, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("show %s: %w", s, err)
		}
		unix.Close(fds[i])
		if i >= len(p.Show) {
			if err := unix.Mount("", s, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", s, err)
			}
		}
	}
	for _, h := range hidden {
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", h, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc of the new PID namespace: %w", err)
	}
	return nil
}

// Private are the world-writable directories each executor gets a fresh,
// empty tmpfs of: no tenant reads or leaves files for another there.
var Private = []string{"/tmp", "/var/tmp", "/dev/shm"}

// forwarded are the signals passed on to the executor.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// supervise starts the executor as the tenant's user, in a process group
// of its own (the agent's signals to init's group reach it through init
// once), passes signals on, reaps every process of the namespace, and
// returns the executor's exit status (128 + signal when killed).
func supervise(p Plan, stderr io.Writer) int {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	cmd := exec.Command(p.Argv[0])
	cmd.Args = p.Argv
	cmd.Dir = p.Dir
	cmd.Env = without(os.Environ(), EnvPlan)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(p.UID), Gid: uint32(p.GID), Groups: []uint32{}},
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := harden(p.AllowUserNS); err != nil {
		fmt.Fprintln(stderr, "tenant init:", err)
		return exitSetup
	}
	if err := cmd.Start(); err != nil { // on the hardened thread (Init locked it)
		fmt.Fprintln(stderr, "tenant init: start the executor:", err)
		return exitStart
	}
	child := cmd.Process.Pid
	for s := range sigs {
		if s != syscall.SIGCHLD {
			_ = syscall.Kill(child, s.(syscall.Signal))
		}
		// Every signal reaps: a SIGCHLD dropped while the channel was
		// full is covered by the one still queued.
		if code, done := reapAll(child); done {
			return code
		}
	}
	return exitStart // not reached
}

// reapAll waits for every ended process; done once child has ended.
func reapAll(child int) (code int, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return 0, false
		}
		if pid == child {
			if ws.Signaled() {
				return 128 + int(ws.Signal()), true
			}
			return ws.ExitStatus(), true
		}
	}
}

func without(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Cloneflags are the namespaces the agent starts Init in: PID, mount and
// SysV IPC (each executor's message queues, semaphores and shared memory
// its own, stricter than one per tenant).
const Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC

// Probe says why tenants cannot be isolated here (nil: they can): the
// agent must run as root, and the kernel must give it new PID and mount
// namespaces.
func Probe() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the scheduler runs as uid %d, not root: it cannot run tasks as other users", os.Geteuid())
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: Cloneflags}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the kernel refuses new PID, mount and IPC namespaces: %w", err)
	}
	return nil
}
