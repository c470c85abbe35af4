package pidfd

import (
	"errors"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// noPidfd is set once pidfd_open answered ENOSYS: signals go by pid.
var noPidfd atomic.Bool

// Supported reports whether signals go through pidfds (false once the
// kernel refused pidfd_open as unknown).
func Supported() bool { return !noPidfd.Load() }

// Pin is one pinned process. The zero Pin is none.
type Pin struct {
	pid int
	fd  int // -1: no pidfd on this kernel, signals go by pid
}

// Open pins pid. It fails with ESRCH when there is no such process.
func Open(pid int) (Pin, error) {
	if pid <= 0 {
		return Pin{}, syscall.ESRCH
	}
	if !noPidfd.Load() {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			return Pin{pid: pid, fd: fd}, nil
		}
		if !errors.Is(err, syscall.ENOSYS) {
			return Pin{}, err
		}
		noPidfd.Store(true)
	}
	return Pin{pid: pid, fd: -1}, nil
}

// Signal sends sig to the pinned process; ESRCH once it has exited,
// whatever holds its pid now.
func (p Pin) Signal(sig syscall.Signal) error {
	if p.pid <= 0 {
		return syscall.ESRCH
	}
	if p.fd < 0 {
		return syscall.Kill(p.pid, sig)
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// Close releases the pin.
func (p Pin) Close() {
	if p.fd >= 0 && p.pid > 0 {
		_ = unix.Close(p.fd)
	}
}
