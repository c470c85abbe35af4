package cgroups_test

import (
	"os/exec"
	"slices"
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
