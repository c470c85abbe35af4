//go:build linux

package embedded

import "syscall"

// sysProcAttr puts the executor in its own process group and kills it if
// this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
