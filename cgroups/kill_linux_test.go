package cgroups_test

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
)

// TestKillHitsOnlyWhatTheGroupHolds: a group's kill signals pids it read
// from the group; one listed may since have exited and its pid gone to a
// process outside the group. Given a list of a real process tree in the
// group and a pid of a process outside it, the kill ends the tree and
// leaves the outsider, which ends only by the SIGTERM the test sends it.
func TestKillHitsOnlyWhatTheGroupHolds(t *testing.T) {
	_, g := cgroupstest.Require(t)
	// The shell waits on after its children die (a kill reaching them before it would
	// otherwise let it exit 0 first), so only a signal ends it.
	full := g.Argv([]string{"sh", "-c", "sleep 1000 & sleep 1000 & echo ready; while :; do wait; done"})
	tree := exec.Command(full[0], full[1:]...)
	out, err := tree.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tree.Process.Kill(); _ = tree.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the tree did not start: %q %v", line, err)
	}
	outsider := exec.Command("sleep", "1000")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outsider.Process.Kill(); _ = outsider.Wait() })

	members := g.Procs()
	if len(members) != 3 {
		t.Fatalf("the group holds %v, want the shell and its two children", members)
	}
	var exits []int // pidfds of the shell's children, readable once each exits
	for _, p := range members {
		if p == tree.Process.Pid {
			continue
		}
		fd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			t.Skipf("no pidfd: %v", err)
		}
		defer unix.Close(fd)
		exits = append(exits, fd)
	}

	if n := g.KillListed(append(members, outsider.Process.Pid)); n != 3 {
		t.Errorf("signalled %d processes, want the group's 3", n)
	}
	_ = tree.Wait()
	if ws := tree.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the shell ended %v, want killed", tree.ProcessState)
	}
	for _, fd := range exits {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != syscall.EINTR {
				break
			}
		}
	}
	_ = outsider.Process.Signal(syscall.SIGTERM)
	_ = outsider.Wait()
	if ws := outsider.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the process outside the group ended %v: the group's kill reached it", outsider.ProcessState)
	}
}
