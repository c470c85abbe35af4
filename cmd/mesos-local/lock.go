package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockWorkDir takes an exclusive lock on WORKDIR/mesos-local.lock for the
// life of the process: a second mesos-local on the same directory would
// kill the first one's executors when it starts (it reaps what an earlier
// run left behind). The lock dies with the process, even on kill -9.
func lockWorkDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "mesos-local.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock work dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("work dir %s is in use by another mesos-local (pid %s)", dir,
				strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("lock work dir: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
