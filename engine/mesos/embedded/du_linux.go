//go:build linux

package embedded

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// du is what dir and everything below it take on disk (allocated blocks,
// a hard-linked file once), as Mesos' disk/du isolator counts a sandbox.
// It runs as root over a tree a tenant controls, so it never follows a
// link: each directory is opened relative to its parent's descriptor with
// O_NOFOLLOW, and every entry is lstat'ed the same way; a directory on
// another file system is not entered. It stops after budget entries
// (complete false): the usage so far is a lower bound, which is enough to
// find a sandbox over its limit, and bounds the work of a pass.
func du(dir string, budget int) (bytes int64, complete bool, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, false, err
	}
	w := duWalk{dev: st.Dev, left: budget, seen: map[[2]uint64]bool{}}
	w.bytes = st.Blocks * 512
	w.dir(fd)
	return w.bytes, w.left > 0, nil
}

type duWalk struct {
	dev   uint64
	left  int
	bytes int64
	seen  map[[2]uint64]bool // hard-linked files counted
}

// dir adds what fd's entries take and closes fd.
func (w *duWalk) dir(fd int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	for w.left > 0 {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if w.left <= 0 {
				return
			}
			w.left--
			w.entry(fd, name)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.left = 0 // unreadable: count it as not complete
			}
			return
		}
	}
}

func (w *duWalk) entry(parent int, name string) {
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return // gone meanwhile
	}
	if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		key := [2]uint64{st.Dev, st.Ino}
		if w.seen[key] {
			return
		}
		w.seen[key] = true
	}
	w.bytes += st.Blocks * 512
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != w.dev {
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // replaced by a link or a file since the lstat: not followed
	}
	w.dir(fd)
}
