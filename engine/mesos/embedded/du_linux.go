//go:build linux

package embedded

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxDuDepth is how deep below a sandbox du goes. The walk holds a
// descriptor (and a read buffer) for each directory on its way down, in
// the scheduler's own process: a tenant's chain of nested directories
// as deep as the process's descriptor limit would otherwise leave every
// other open of the process (its API's connections, its databases, other
// teams' launches) failing while the walk is at the bottom, and anything
// hidden below that depth uncounted.
const maxDuDepth = 256

// du is what dir and everything below it take on disk (allocated blocks,
// a hard-linked file once), as Mesos' disk/du isolator counts a sandbox.
// It runs as root over a tree a tenant controls, so it never follows a
// link: each directory is opened relative to its parent's descriptor with
// O_NOFOLLOW, and every entry is lstat'ed the same way; a directory on
// another file system is not entered. It stops after budget entries, or
// at a directory deeper than maxDuDepth, or at a directory it cannot
// read: unmeasured then says why, and bytes is a lower bound. A tree
// the walk cannot finish is the tenant's doing (a task can make more
// entries, or deeper, than any bound), so the caller treats it as over
// its limit rather than trusting the lower bound.
func du(dir string, budget int) (bytes int64, unmeasured string, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, "", err
	}
	w := duWalk{dev: st.Dev, left: budget, seen: map[[2]uint64]bool{}}
	w.bytes = st.Blocks * 512
	w.dir(fd, 0)
	if w.short == "" && w.left <= 0 {
		w.short = fmt.Sprintf("more than %d entries", budget)
	}
	return w.bytes, w.short, nil
}

type duWalk struct {
	dev   uint64
	left  int
	bytes int64
	seen  map[[2]uint64]bool // hard-linked files counted
	short string             // why the walk stopped before the end
}

// stop ends the walk, saying why.
func (w *duWalk) stop(why string) {
	w.left = 0
	if w.short == "" {
		w.short = why
	}
}

// dir adds what fd's entries take and closes fd; fd is depth directories
// below the root.
func (w *duWalk) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	for w.left > 0 {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if w.left <= 0 {
				return
			}
			w.left--
			w.entry(fd, name, depth)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.stop(fmt.Sprintf("a directory could not be read: %v", err))
			}
			return
		}
	}
}

func (w *duWalk) entry(parent int, name string, depth int) {
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
	if depth+1 > maxDuDepth {
		w.stop(fmt.Sprintf("directories more than %d deep", maxDuDepth))
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		w.dir(fd, depth+1)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		// Gone, or replaced by a link or a file since the lstat: not followed.
	default: // out of descriptors or memory: what is below is not counted
		w.stop(fmt.Sprintf("a directory could not be opened: %v", err))
	}
}
