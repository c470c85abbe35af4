package process

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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

// v1Mounts maps each cgroup v1 controller to its mount point.
func v1Mounts(t *testing.T) map[string]string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, _ := strings.Cut(s.Text(), " - ")
		fs := strings.Fields(post)
		if len(fs) < 3 || fs[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(fs[2], ",") {
			if o == "memory" || o == "cpu" || o == "pids" {
				out[o] = strings.Fields(pre)[4]
			}
		}
	}
	return out
}

// threadCgroups is the calling thread's /proc/thread-self/cgroup.
func threadCgroups(t *testing.T) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", syscall.Gettid()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A process with Spec.Join starts in that cgroup v1 group in every
// hierarchy (forked by a thread that stepped in), and the forking thread
// is back in its own groups afterwards; a group that cannot be joined
// fails the start and leaves the thread where it was.
func TestStartsInV1GroupThroughThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a cgroup")
	}
	mounts := v1Mounts(t)
	if len(mounts) < 3 {
		if os.Getenv("CI") != "" {
			t.Fatalf("cgroup v1 memory, cpu and pids are not all mounted: %v", mounts)
		}
		t.Skip("cgroup v1 memory, cpu and pids are not all mounted")
	}
	runtime.LockOSThread() // so that the thread checked is the one that forks
	defer runtime.UnlockOSThread()
	before := threadCgroups(t)
	own := map[string]string{} // controller → the thread's group
	for _, line := range strings.Split(before, "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	rel := fmt.Sprintf("elasticjob-test/join-%d", os.Getpid())
	var join, leave []string
	for c, mnt := range mounts {
		dir := filepath.Join(mnt, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Rmdir(dir) })
		join = append(join, filepath.Join(dir, "tasks"))
		leave = append(leave, filepath.Join(mnt, own[c], "tasks"))
	}
	spec := shSpec(t, "cat /proc/self/cgroup")
	spec.Join, spec.Leave = join, leave
	if res := run(t, t.Context(), spec); res.Message() != "" {
		t.Fatalf("%+v", res)
	}
	out, _ := os.ReadFile(spec.Stdout)
	for c := range mounts {
		if !strings.Contains(string(out), ":/"+rel+"\n") || !regexpFor(c, rel).MatchString(string(out)) {
			t.Fatalf("%s: /proc/self/cgroup of the process:\n%s", c, out)
		}
	}
	if after := threadCgroups(t); after != before {
		t.Fatalf("the forking thread did not go back:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	spec.Join = []string{filepath.Join(mounts["memory"], "elasticjob-test", "missing", "tasks")}
	if _, err := Run(t.Context(), spec, nil); err == nil || !strings.Contains(err.Error(), "cgroup") {
		t.Fatalf("missing cgroup: %v", err)
	}
	if after := threadCgroups(t); after != before {
		t.Fatalf("the thread moved after a failed join:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// regexpFor matches controller c's line naming group rel.
func regexpFor(c, rel string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\d+:([a-z_=]+,)*` + c + `(,[a-z_=]+)*:/` + regexp.QuoteMeta(rel) + `$`)
}
