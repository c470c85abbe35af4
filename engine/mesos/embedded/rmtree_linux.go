//go:build linux

package embedded

import (
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// rmDepth bounds how many directories deep removeTree holds open.
const rmDepth = 64

// removeTree removes dir and everything below it as os.RemoveAll does
// (relative to each parent's descriptor, following no link), but with a
// bounded number of descriptors. os.RemoveAll holds one for each
// directory on its way down, in the scheduler's own process: a tenant's
// sandbox holding a chain of nested directories deeper than the
// descriptors the process has left would never be removed, and every
// collection would run the process out of them again. So the directories
// rmDepth deep are first moved up to dir itself (a rename within the same
// tree, by descriptor), until no chain below dir is deeper than that.
func removeTree(dir string) error {
	if err := flatten(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// flatten moves every directory rmDepth deep below dir up to dir, under
// a name of its own, and does the same below what it moved.
func flatten(dir string) error {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil // nothing to flatten: os.RemoveAll removes what is there
	case err != nil:
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(root)
	f := flattener{root: root}
	if err := f.visit(root, 0); err != nil {
		return err
	}
	for i := 0; i < len(f.moved); i++ {
		fd, err := unix.Openat(root, f.moved[i], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: dir + "/" + f.moved[i], Err: err}
		}
		err = f.visit(fd, 1)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

type flattener struct {
	root  int
	moved []string // names below root of the directories moved up
	n     int      // the next name to try
}

// visit flattens below fd, depth directories below the root.
func (f *flattener) visit(fd, depth int) error {
	dirs, err := subdirs(fd)
	if err != nil {
		return err
	}
	for _, name := range dirs {
		if depth+1 < rmDepth {
			child, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // gone, or not a directory: os.RemoveAll sees to it
			}
			err = f.visit(child, depth+1)
			unix.Close(child)
			if err != nil {
				return err
			}
			continue
		}
		for {
			to := ".flattened-" + strconv.Itoa(f.n)
			f.n++
			err := unix.Renameat2(fd, name, f.root, to, unix.RENAME_NOREPLACE)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return &os.PathError{Op: "rename", Path: name, Err: err}
			}
			f.moved = append(f.moved, to)
			break
		}
	}
	return nil
}

// subdirs lists the directories in fd (read whole before any is moved,
// so that moving one does not make the listing skip another).
func subdirs(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "")
	defer f.Close()
	var dirs []string
	for {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				dirs = append(dirs, name)
			}
		}
		if errors.Is(err, io.EOF) {
			return dirs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
