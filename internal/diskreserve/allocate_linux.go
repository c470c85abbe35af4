package diskreserve

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f size bytes of allocated blocks.
func allocate(f *os.File, size int64) error { return unix.Fallocate(int(f.Fd()), 0, 0, size) }
