//go:build linux

package cgroups

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// cloneIntoCgroup reports whether the kernel has clone3 CLONE_INTO_CGROUP
// (Linux 5.7) and this process may call clone3: under a seccomp filter
// (a tenant's executor's, Docker's default) clone3 fails with ENOSYS, and
// Go's exec does not fall back to clone.
var cloneIntoCgroup = sync.OnceValue(func() bool { return kernelAtLeast(5, 7) && !seccompFiltered() })

// seccompFiltered says whether this process runs under a seccomp filter.
func seccompFiltered() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && strings.Contains(string(b), "\nSeccomp:\t2\n")
}

func kernelAtLeast(major, minor int) bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	var maj, min int
	if n, _ := fmt.Sscanf(string(b), "%d.%d", &maj, &min); n < 2 {
		return false
	}
	return maj > major || maj == major && min >= minor
}
