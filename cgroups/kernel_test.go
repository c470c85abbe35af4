package cgroups_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
)

// start runs argv inside g (through Argv) and returns the running command.
func start(t *testing.T, g *cgroups.Group, argv ...string) *exec.Cmd {
	t.Helper()
	full := g.Argv(argv)
	cmd := exec.Command(full[0], full[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The kernel's OOM killer, confined by a child group's limit, kills the
// process that allocates past it and leaves its sibling group alone; the
// child's counters say so; Destroy leaves nothing behind.
func TestKernelMemoryLimitHitsOnlyTheOffender(t *testing.T) {
	_, g := cgroupstest.Require(t)
	hog, calm := g.Child("hog"), g.Child("calm")
	for _, c := range []*cgroups.Group{hog, calm} {
		if err := c.Create(); err != nil {
			t.Fatal(err)
		}
		if err := c.SetLimits(cgroups.Limits{MemoryBytes: 32 << 20, CPUs: 0.5, CPUQuota: true, Pids: 16}); err != nil {
			t.Fatal(err)
		}
	}
	sleeper := start(t, calm, "sleep", "300")
	waitFor(t, "the sleeper in its group", func() bool { return slices.Contains(calm.Procs(), sleeper.Process.Pid) })
	before := hog.Stats()
	err := start(t, hog, "dd", "if=/dev/zero", "of=/dev/null", "bs=100M", "count=1").Wait()
	ws, _ := err.(*exec.ExitError)
	if ws == nil || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("dd past the limit ended with %v, want SIGKILL", err)
	}
	after := hog.Stats()
	if !after.OOMKilledSince(before) || after.MemoryMaxHits <= 0 || after.MemoryLimit != 32<<20 {
		t.Fatalf("hog stats %+v (before %+v)", after, before)
	}
	if calm.Stats().OOMKills != 0 || sleeper.Process.Signal(syscall.Signal(0)) != nil {
		t.Fatal("the sibling group was hit")
	}
	if err := g.Destroy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Wait(); err == nil {
		t.Fatal("the sleeper survived Destroy")
	}
	if g.Exists() {
		t.Fatal("group still there after Destroy")
	}
}

// RemoveEmpty removes an empty group in every hierarchy at once, and
// leaves one that holds a child group or a process (EBUSY) for Destroy.
func TestRemoveEmptyOnlyRemovesEmptyGroups(t *testing.T) {
	_, g := cgroupstest.Require(t)
	empty, parent, busy := g.Child("empty"), g.Child("parent"), g.Child("busy")
	for _, c := range []*cgroups.Group{empty, parent.Child("child"), busy} {
		if err := c.Create(); err != nil {
			t.Fatal(err)
		}
	}
	if err := empty.RemoveEmpty(); err != nil || empty.Exists() {
		t.Fatalf("empty group: %v (still there: %v)", err, empty.Exists())
	}
	if err := empty.RemoveEmpty(); err != nil {
		t.Fatalf("a group already gone: %v", err)
	}
	if err := parent.RemoveEmpty(); !errors.Is(err, syscall.EBUSY) || !parent.Child("child").Exists() {
		t.Fatalf("a group with a child: %v, want EBUSY and the child kept", err)
	}
	sleeper := start(t, busy, "sleep", "300")
	waitFor(t, "the sleeper in its group", func() bool { return slices.Contains(busy.Procs(), sleeper.Process.Pid) })
	if err := busy.RemoveEmpty(); !errors.Is(err, syscall.EBUSY) || !busy.Exists() {
		t.Fatalf("a group with a process: %v, want EBUSY and the group kept", err)
	}
	for _, c := range []*cgroups.Group{parent, busy} {
		if err := c.Destroy(10 * time.Second); err != nil || c.Exists() {
			t.Fatalf("Destroy %s: %v", c.Path(), err)
		}
	}
}

// The CPU values SetLimits leaves unwritten in a group it just made are
// the kernel's own: the files read back as if they had been written.
func TestFreshGroupHoldsTheKernelDefaults(t *testing.T) {
	h, g := cgroupstest.Require(t)
	c := g.Child("fresh")
	if err := c.Create(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLimits(cgroups.Limits{MemoryBytes: 64 << 20, CPUs: 1, Pids: 16}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu.max": "max 100000", "cpu.weight": "39"}
	if h.Mode() == cgroups.V1 {
		want = map[string]string{"cpu.shares": "1024", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}
	}
	for f, v := range want {
		b, err := os.ReadFile(filepath.Join(c.Dir(cgroups.CPU), f))
		if err != nil || strings.TrimSpace(string(b)) != v {
			t.Errorf("%s = %q (%v), want %s", f, b, err, v)
		}
	}
}
