//go:build linux

package embedded

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

// sysProcAttr starts the executor in a session (and process group) of its
// own, so that nothing sent to the agent's group or terminal reaches it.
// The executor of a framework that does not checkpoint dies with this
// process (nothing would recover it); one that checkpoints outlives it,
// for the agent's next run to take over. A confined executor starts in
// new PID and mount namespaces (its tenant's init, tenancy.go).
func sysProcAttr(checkpointed, confined bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	if confined {
		a.Cloneflags = tenant.Cloneflags
	}
	if !checkpointed {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// startIn makes cmd start in the cgroup v2 directory dir (clone3
// CLONE_INTO_CGROUP); done closes the directory once cmd has started.
// An empty dir changes nothing.
func startIn(cmd *exec.Cmd, dir string) (done func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
	return func() { f.Close() }, nil
}

// awaitExit waits for the child pid to exit and leaves it unreaped (a
// zombie), so that its pid, and the process group it leads, still name
// it and nothing else until it is reaped. It reports false when it could
// not wait (the caller then reaps without that guarantee).
func awaitExit(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
