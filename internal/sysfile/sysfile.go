// Package sysfile writes the small control files of the kernel (cgroup
// tasks, limits) with bare system calls: open, one write, close. os.OpenFile
// costs three times as much here (it probes the descriptor's flags and
// registers it with the runtime's poller, which cgroup files accept), and a
// task's start writes several such files.
package sysfile

import (
	"fmt"
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
		return &pathError{op: "open", path: path, err: err}
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
		return &pathError{op: "write", path: path, err: err}
	case n != len(value):
		return &pathError{op: "write", path: path, err: fmt.Errorf("short write (%d of %d bytes)", n, len(value))}
	case cerr != nil:
		return &pathError{op: "close", path: path, err: cerr}
	}
	return nil
}

// pathError reads like os.PathError and unwraps to the errno.
type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
