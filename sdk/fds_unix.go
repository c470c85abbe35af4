//go:build unix

package sdk

import (
	"fmt"
	"os"
	"syscall"
)

// protocolFiles opens the protocol's file descriptors, close-on-exec so that
// processes the job starts do not inherit them.
func protocolFiles() (in, out *os.File, err error) {
	for _, fd := range []int{RunFD, DoneFD} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, nil, fmt.Errorf("%s=1 but file descriptor %d is not open: %w", EnvProtocol, fd, err)
		}
		// The executor passes pipes; anything else is some file of our own
		// (the Go runtime may hold fd 3 when none was passed).
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			return nil, nil, fmt.Errorf("%s=1 but file descriptor %d is not a pipe from the executor", EnvProtocol, fd)
		}
		syscall.CloseOnExec(fd)
	}
	return os.NewFile(RunFD, "elasticjob-run"), os.NewFile(DoneFD, "elasticjob-done"), nil
}
