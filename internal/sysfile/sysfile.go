// Package sysfile writes the small control files of the kernel (cgroup
// tasks, limits) with bare system calls: open, one write, close. os.OpenFile
// costs three times as much here (it probes the descriptor's flags and
// registers it with the runtime's poller, which cgroup files accept), and a
// task's start writes several such files.
package sysfile

import (
	"fmt"
	"io/fs"
	"syscall"
)

// Write writes value to the existing file at path in one write call,
// truncating it first when trunc is set.
func Write(path, value string, trunc bool) error {
	flags := syscall.O_WRONLY | syscall.O_CLOEXEC
	if trunc {
		flags |= syscall.O_TRUNC
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flags, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var n int
	for {
		n, err = syscall.Write(fd, []byte(value))
		if err != syscall.EINTR {
			break
		}
	}
	cerr := syscall.Close(fd)
	switch {
	case err != nil:
		return &fs.PathError{Op: "write", Path: path, Err: err}
	case n != len(value):
		return &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("short write (%d of %d bytes)", n, len(value))}
	case cerr != nil:
		return &fs.PathError{Op: "close", Path: path, Err: cerr}
	}
	return nil
}
