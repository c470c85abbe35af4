//go:build !linux

package pidfd

import "syscall"

// Supported reports whether signals go through pidfds: never here.
func Supported() bool { return false }

// Pin is one process, by pid alone: there is no pidfd here.
type Pin struct{ pid int }

// Open pins pid, by its number only.
func Open(pid int) (Pin, error) {
	if pid <= 0 {
		return Pin{}, syscall.ESRCH
	}
	return Pin{pid: pid}, nil
}

// Signal sends sig to the pid.
func (p Pin) Signal(sig syscall.Signal) error {
	if p.pid <= 0 {
		return syscall.ESRCH
	}
	return syscall.Kill(p.pid, sig)
}

// Close releases the pin.
func (p Pin) Close() {}
