//go:build linux

package tenant

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// harden makes what the calling thread forks unprivileged for good: no
// capability in its bounding set (a setuid-root program gains none), no
// ambient ones, no_new_privs, and, unless allowUserNS, a seccomp filter
// that refuses new user namespaces. Every one of these is a property of
// the thread, not the process: the caller must have locked its goroutine
// to the thread that then forks the executor (Init does), or the child of
// another thread inherits none of it.
func harden(allowUserNS bool) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if allowUserNS {
		return nil
	}
	return installFilter(denyUserNS(runtime.GOARCH))
}

// lastCap is the kernel's highest capability number.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read the last capability: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("read the last capability: %q", b)
	}
	return n, nil
}

// installFilter installs prog on the calling thread (no_new_privs must be
// set: the kernel requires it of a process without CAP_SYS_ADMIN, and it
// is what keeps the filter from being a way to confuse a setuid program).
func installFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("install the seccomp filter: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}
