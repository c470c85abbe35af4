package main

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/ejcloud/elasticjob/config"
)

// cgroupTree writes a /proc/self/cgroup and the limit files under a root.
func cgroupTree(t *testing.T, self string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	proc := filepath.Join(dir, "cgroup")
	if err := os.WriteFile(proc, []byte(self), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "sys")
	for name, v := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return proc, root
}

func TestCgroupMemoryMax(t *testing.T) {
	for _, tc := range []struct {
		name, self string
		files      map[string]string
		want       int64
		ok         bool
	}{
		{"v2 container (own namespace)", "0::/\n", map[string]string{"memory.max": "1073741824"}, 1 << 30, true},
		{"v2 nested: the lowest of the group and its parents", "0::/kubepods/pod1/c1\n",
			map[string]string{"kubepods/pod1/memory.max": "536870912", "kubepods/pod1/c1/memory.max": "max", "memory.max": "max"}, 512 << 20, true},
		{"v2 without a limit", "0::/a\n", map[string]string{"a/memory.max": "max"}, 0, false},
		{"v1 hybrid: the memory controller's group", "4:memory:/job/x\n1:cpu:/\n0::/\n",
			map[string]string{"memory/job/x/memory.limit_in_bytes": "2147483648"}, 2 << 30, true},
		{"v1 unlimited", "4:memory:/job/x\n0::/\n", map[string]string{"memory/job/x/memory.limit_in_bytes": "9223372036854771712"}, 0, false},
		{"nothing readable", "0::/gone\n", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, root := cgroupTree(t, tc.self, tc.files)
			got, ok := cgroupMemoryMax(proc, root)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("cgroupMemoryMax = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// memory_limit=auto takes 90 % of the cgroup's limit, leaves GOMEMLIMIT
// alone when set, and a size is taken as it is.
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	proc, root := cgroupTree(t, "0::/\n", map[string]string{"memory.max": "1073741824"})
	log := slog.New(slog.DiscardHandler)
	noEnv := func(string) (string, bool) { return "", false }
	auto := config.Config{MemoryLimitAuto: true}
	gib := int64(1 << 30)
	if got := setMemoryLimit(auto, noEnv, proc, root, log); got != int64(float64(gib)*autoMemoryShare) || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("auto under a 1 GiB cgroup: %d (runtime %d)", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	withEnv := func(k string) (string, bool) { return "700MiB", k == "GOMEMLIMIT" }
	if got := setMemoryLimit(auto, withEnv, proc, root, log); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("auto with GOMEMLIMIT set: %d", got)
	}
	if got := setMemoryLimit(config.Config{MemoryLimit: 900 << 20}, noEnv, proc, root, log); got != 900<<20 || debug.SetMemoryLimit(-1) != 900<<20 {
		t.Fatalf("900MiB: %d", got)
	}
}

// TestGCHeadroomFollowsTheRole: a standby collects at 1.5 × its live heap,
// a leader at Go's 2 ×, and a GOGC the operator set is left alone.
func TestGCHeadroomFollowsTheRole(t *testing.T) {
	var got []int
	g := gcHeadroom{set: func(p int) int { got = append(got, p); return 0 }}
	g.leading(false)
	g.leading(true)
	g.leading(false)
	if want := []int{standbyGCPercent, leaderGCPercent, standbyGCPercent}; !slices.Equal(got, want) {
		t.Fatalf("percentages set %v, want %v", got, want)
	}
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "GOGC" && v != "" }
	}
	if !newGCHeadroom(env("200")).off || newGCHeadroom(env("")).off {
		t.Fatal("GOGC set must turn the headroom by role off, and only then")
	}
	got = nil
	g.off = true
	g.leading(true)
	if len(got) != 0 {
		t.Fatalf("with GOGC set, %v was set", got)
	}
}
