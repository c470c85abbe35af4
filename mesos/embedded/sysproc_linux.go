//go:build linux

package embedded

import (
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr puts the executor in its own process group and kills it if
// this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
