package safeopen

import (
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 answered ENOSYS (a kernel before 5.6, or
// a seccomp filter that refuses it): every later open walks instead.
var noOpenat2 atomic.Bool

// openBeneath opens name (valid, relative) beneath dirfd with flags
// (O_NOFOLLOW included), following no link in any component.
func openBeneath(dirfd int, name string, flags int) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := retry(func() (int, error) { return unix.Openat2(dirfd, name, &how) })
		if err != unix.ENOSYS {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return walk(dirfd, name, flags)
}

// walk opens name one component at a time, each directory with
// O_NOFOLLOW|O_DIRECTORY, the last with flags: what openat2 does where
// the kernel lacks it. Valid already refused "..", so nothing climbs out.
func walk(dirfd int, name string, flags int) (int, error) {
	parts := strings.Split(name, "/")
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for _, p := range parts[:len(parts)-1] {
		next, err := retry(func() (int, error) {
			return unix.Openat(cur, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = next
	}
	return retry(func() (int, error) { return unix.Openat(cur, parts[len(parts)-1], flags, 0) })
}
