package process

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// cgroup2Mount is where a cgroup2 file system is mounted ("" if none).
func cgroup2Mount(t *testing.T) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, _ := strings.Cut(s.Text(), " - ")
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			return strings.Fields(pre)[4]
		}
	}
	return ""
}

// A process with Spec.Cgroup starts in that cgroup v2 directory (clone3
// CLONE_INTO_CGROUP), never anywhere else first. Any cgroup2 mount will
// do, with or without controllers.
func TestStartsInCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a cgroup")
	}
	mnt := cgroup2Mount(t)
	if mnt == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no cgroup2 file system mounted")
		}
		t.Skip("no cgroup2 file system mounted")
	}
	rel := fmt.Sprintf("elasticjob-test/clone-%d", os.Getpid())
	dir := filepath.Join(mnt, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(dir) })
	spec := shSpec(t, "cat /proc/self/cgroup")
	spec.Cgroup = dir
	if res := run(t, t.Context(), spec); res.Message() != "" {
		t.Fatalf("%+v", res)
	}
	out, _ := os.ReadFile(spec.Stdout)
	if !strings.Contains(string(out), "0::/"+rel+"\n") {
		t.Fatalf("/proc/self/cgroup of the process:\n%s", out)
	}
	spec.Cgroup = filepath.Join(mnt, "elasticjob-test", "missing")
	if _, err := Run(t.Context(), spec, nil); err == nil || !strings.Contains(err.Error(), "cgroup") {
		t.Fatalf("missing cgroup: %v", err)
	}
}
