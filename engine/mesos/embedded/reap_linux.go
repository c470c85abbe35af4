//go:build linux

package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ejcloud/elasticjob/internal/pidfd"
)

// A container is destroyed with everything it started. Executors put each
// task in a process group of its own, so killing the executor's group is
// not enough; instead every process whose environment names a sandbox
// (MESOS_DIRECTORY, which executors pass on to their tasks) is killed:
// when its executor exits, and at start for sandboxes under the work
// directory left by an earlier run of this agent that was killed outright.

// reap kills the processes whose MESOS_DIRECTORY is dir, or is under dir
// when prefix is set, except those of the sandboxes keep holds (nil: none).
// It returns how many it killed.
func reap(dir string, prefix bool, keep func(sandbox string) bool) int {
	return total(reapAll(dir, prefix, keep))
}

// reapAll is reap, counting the processes killed per sandbox.
func reapAll(dir string, prefix bool, keep func(sandbox string) bool) map[string]int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	killed := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		// Pinned before its environment is read: the signal reaches the
		// process read, or none once it has exited, never one that took
		// its pid since (pidfd).
		pin, err := pidfd.Open(pid)
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil {
			sandbox, ok := sandboxOf(env)
			if ok && (sandbox == dir || (prefix && strings.HasPrefix(sandbox, dir+"/"))) && (keep == nil || !keep(sandbox)) {
				if pin.Signal(syscall.SIGKILL) == nil {
					killed[sandbox]++
				}
			}
		} // else gone, or not ours to read
		pin.Close()
	}
	return killed
}

func sandboxOf(environ []byte) (string, bool) {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("MESOS_DIRECTORY=")); ok {
			return string(v), true
		}
	}
	return "", false
}
