package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPinCPUsMovesAProcessAndReleases: a process pinned runs on the CPUs named alone
// (its affinity as the kernel reports it), and Release gives it back every CPU and removes
// the group. Skipped where no v1 cpuset hierarchy is writable.
func TestPinCPUsMovesAProcessAndReleases(t *testing.T) {
	own, _, err := SplitCPUs()
	if err != nil {
		t.Skip(err)
	}
	if _, err := cpusetMount(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	p, err := PinCPUs(pid, fmt.Sprintf("test-%d", pid), own)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) { // not root, or a read-only cgroup mount
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := allowed(t, pid); got != own {
		t.Errorf("pinned: runs on CPUs %q, want %q", got, own)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if got := allowed(t, pid); got == own {
		t.Errorf("released: still runs on CPU %q alone", got)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Errorf("released: %s still there (%v)", filepath.Base(p.dir), err)
	}
}

// allowed is pid's Cpus_allowed_list.
func allowed(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return ""
}
