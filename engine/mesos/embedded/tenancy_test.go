package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

func TestReachable(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := reachable(root, nil, false); err != nil {
		t.Skipf("the temporary directory is out of other users' reach: %v", err)
	}
	closed := filepath.Join(root, "closed")
	data := filepath.Join(closed, "data")
	if err := os.MkdirAll(filepath.Join(data, "mesos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(data, "mesos")
	if err := reachable(work, []string{work}, false); err == nil || !strings.Contains(err.Error(), "closed to other users") {
		t.Fatalf("a work directory below a 0700 directory: %v", err)
	}
	if err := os.Chmod(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o700); err != nil { // hidden: its tmpfs takes its place
		t.Fatal(err)
	}
	if err := reachable(work, []string{data, work}, false); err != nil {
		t.Fatalf("below a hidden 0700 data directory: %v", err)
	}
	prog := filepath.Join(root, "executor")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := reachable(prog, nil, true); err == nil {
		t.Fatal("a program other users cannot run was accepted")
	}
	_ = os.Chmod(prog, 0o755)
	if err := reachable(prog, nil, true); err != nil {
		t.Fatal(err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"pay": "pay", "a/b": "a_2fb", ".x": "_2ex", "ns-1.2": "ns-1.2"} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// With Tenancy, the agent runs the executor through the init as its
// tenant's user, in a PID namespace of its own, in a sandbox that is the
// tenant's alone; the uid is recorded for the tenant.
func TestTenantExecutorConfined(t *testing.T) {
	if err := tenant.Probe(); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const uid = 1879050000
	c := newCluster(t, func(cfg *Config) {
		cfg.Tenancy = &Tenancy{Init: exe, UIDs: tenant.Range{Lo: uid, Hi: uid + 9}, ReadOnly: []string{filepath.Dir(exe)}, RangeLockDir: t.TempDir(),
			Of: func(_ string, info mesos.ExecutorInfo) string { return strings.Split(info.ExecutorID.Value, "-")[0] }}
	})
	s := subscribe(t, c, frameworkInfo())
	// 96 MB: the init here is this test binary too (with -race, tens of MB),
	// in the executor's group; tenant-init takes about 3 MB.
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "pay-e1", "1", 0.1, 96), 1, 64))
	if st := s.update("t1"); st.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("t1: %s %s", st.GetState(), st.GetMessage())
	}
	snap := c.Snapshot().Executors[0]
	st, err := os.Stat(snap.Directory)
	if err != nil || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("sandbox %s: %v, want mode 0700 and uid %d", snap.Directory, st.Mode(), uid)
	}
	if env, err := os.Stat(filepath.Join(snap.Directory, "env.txt")); err != nil || env.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("the executor's env.txt: %v (not written as the tenant)", err)
	}
	child := childOf(snap.PID)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", child))
	if !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t", uid)) {
		t.Errorf("the executor %d (child of the init %d) does not run as %d:\n%s", child, snap.PID, uid, status)
	}
	ours, _ := os.Readlink("/proc/self/ns/pid")
	if theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", child)); theirs == "" || theirs == ours {
		t.Errorf("the executor's PID namespace %q is ours %q", theirs, ours)
	}
	b, _ := os.ReadFile(filepath.Join(c.cfg.WorkDir, "tenants.json"))
	if !strings.Contains(string(b), fmt.Sprintf(`"pay": %d`, uid)) {
		t.Errorf("tenants.json: %s", b)
	}
	// Shut down: the executor, its task and the init end.
	s.mustCall(&scheduler.Call{Type: scheduler.Call_SHUTDOWN, Shutdown: &scheduler.Call_Shutdown{
		ExecutorID: mesos.ExecutorID{Value: "pay-e1"}, AgentID: mesos.AgentID{Value: c.AgentID()}}})
	s.next(scheduler.Event_FAILURE)
	for _, pid := range []int{child, snap.PID} {
		eventually(t, fmt.Sprintf("process %d to end", pid), func() bool {
			_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
			return err != nil
		})
	}
}

// childOf is a child process of pid (0: none).
func childOf(pid int) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(d.Name())
			return n
		}
	}
	return 0
}
