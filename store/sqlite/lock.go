//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked means another process holds the data directory.
var ErrLocked = errors.New("sqlite store: data directory locked")

// lockDir takes an exclusive, non-blocking flock on lockPath and records
// this process's pid in it. The kernel drops the lock when the process
// dies, so a kill -9 never leaves a stale lock behind. The file is not
// removed on unlock: removing a lock file races with the next locker.
func lockDir(lockPath string) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open lock file: %w", err)
	}
	_ = f.Chmod(0o600) // an earlier version made it 0644
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := readPID(f)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another scheduler (pid %s): %w",
				filepath.Dir(lockPath), pid, ErrLocked)
		}
		return nil, fmt.Errorf("sqlite store: lock %s: %w", lockPath, err)
	}
	if err := writePID(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("sqlite store: write pid to %s: %w", lockPath, err)
	}
	return f, nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

func readPID(f *os.File) string {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if pid := strings.TrimSpace(string(b)); err == nil && pid != "" {
		return pid
	}
	return "unknown"
}

// unlockDir releases the lock taken by lockDir.
func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the last descriptor releases the flock
}
