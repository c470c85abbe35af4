//go:build unix && !linux

package embedded

import "syscall"

// sysProcAttr puts the executor in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
