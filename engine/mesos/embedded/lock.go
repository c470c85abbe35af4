package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the work directory's lock, held by the agent for the life of
// its process.
const lockFile = "agent.lock"

// lockWorkDir takes an exclusive lock on WORKDIR/agent.lock: a second
// agent on the same directory would take over (or, recovering, kill) the
// first one's executors. The lock dies with the process, even on kill -9,
// and no executor inherits it (close-on-exec).
func lockWorkDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local: lock work dir: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local: lock work dir: %w", err)
	}
	_ = f.Chmod(0o600) // an earlier version made it 0640
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("local: work dir %s is in use by another running agent (pid %s): one scheduler or mesos-local per directory",
				dir, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("local: lock work dir: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
