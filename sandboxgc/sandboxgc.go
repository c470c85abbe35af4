// Package sandboxgc holds the rule by which sandboxes are garbage
// collected, the Mesos agent's: a finished sandbox may live gc_delay ×
// max(0, 1 − gc_disk_headroom − disk usage), so the fuller the disk, the
// sooner it goes, and with less than the headroom free it goes at once.
// The embedded agent applies it to terminated executors' sandboxes and
// the executor to its finished tasks' directories.
package sandboxgc

import (
	"fmt"
	"syscall"
	"time"
)

// Defaults of the settings (those of a Mesos agent).
const (
	DefaultDelay    = 7 * 24 * time.Hour // gc_delay
	DefaultHeadroom = 0.1                // gc_disk_headroom
)

// MaxAge is how old a finished sandbox may get at the given disk usage
// (a fraction).
func MaxAge(delay time.Duration, headroom, usage float64) time.Duration {
	return time.Duration(float64(delay) * max(0, 1-headroom-usage))
}

// DiskUsage is the used fraction of the file system holding path.
func DiskUsage(path string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks), nil
}
