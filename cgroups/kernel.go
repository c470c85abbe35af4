//go:build linux

package cgroups

import (
	"fmt"
	"sync"
	"syscall"
)

// cloneIntoCgroup reports whether the kernel has clone3 CLONE_INTO_CGROUP
// (Linux 5.7).
var cloneIntoCgroup = sync.OnceValue(func() bool { return kernelAtLeast(5, 7) })

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
