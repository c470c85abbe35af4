package embedded

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

// A confined executor's container is below its tenant's group, which has
// the tenant's caps (its own, Config.NamespaceCaps). Its tasks get groups the agent made, with the task's
// limits, before the executor hears of them; the tenant's user may only
// move processes in: it can raise no limit and make no group anywhere in
// its container. The container's pids.max is what the executor and its
// tasks declare, and an ended task's group is removed.
func TestTaskGroupsAreRoots(t *testing.T) {
	if err := tenant.Probe(); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const uid = 1879050100
	c := isolatedCluster(t, func(cfg *Config) {
		cfg.PidsMax = 100
		// The scheduler's caps, which the tenant's own record replaces.
		cfg.NamespacePidsMax, cfg.NamespaceMemMB = 8192, 4096
		cfg.NamespaceCaps = func(string) NamespaceCaps { return NamespaceCaps{PidsMax: 1000, MemMB: 512} }
		cfg.Tenancy = &Tenancy{Init: exe, UIDs: tenant.Range{Lo: uid, Hi: uid + 9}, ReadOnly: []string{filepath.Dir(exe)}, RangeLockDir: t.TempDir()}
	})
	if !c.iso.agent.Hierarchy().Has(cgroups.Pids) {
		t.Skip("no pids controller")
	}
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.1, 96)
	s.launch(s.offer(), taskInfo(c, "t1", "hang", ex, 1, 64))
	if st := s.update("t1"); st.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("t1: %s %s", st.GetState(), st.GetMessage())
	}
	s.launch(s.freshOffer(), taskInfo(c, "t2", "hang", ex, 1, 64))
	s.ack(s.update("t2"))
	g := containerOf(c, "e1")
	task := g.Child(cgroups.TaskName("t1"))
	pids := func(g *cgroups.Group) string {
		b, _ := os.ReadFile(filepath.Join(g.Dir(cgroups.Pids), "pids.max"))
		return strings.TrimSpace(string(b))
	}
	if got := pids(task); got != "100" {
		t.Errorf("task group pids.max %q, want 100 (made by the agent before the launch)", got)
	}
	if got := pids(g); got != "300" {
		t.Errorf("container pids.max %q, want 300: the executor's 100 and two tasks' 100 each", got)
	}
	ns := c.iso.agent.Hierarchy().Group(path.Dir(g.Path()))
	if !strings.HasPrefix(path.Base(ns.Path()), nsPrefix) || pids(ns) != "1000" || memLimitMB(ns) != 512 {
		t.Errorf("the container %s is not below its tenant's group with the tenant's caps (pids.max %q, %d MB)",
			g.Path(), pids(ns), memLimitMB(ns))
	}
	for _, f := range []string{"tasks", "cgroup.procs"} {
		if owner(t, filepath.Join(task.Dir(cgroups.Pids), f)) != uid {
			t.Errorf("task group's %s is not the tenant's: the executor cannot move the task in", f)
		}
	}
	for _, d := range []*cgroups.Group{ns, g, g.Child("executor"), task} {
		for _, c := range []string{cgroups.Pids, cgroups.Memory, cgroups.CPU} {
			dir := d.Dir(c)
			if owner(t, dir) != 0 || owner(t, filepath.Join(dir, "pids.max")) > 0 {
				t.Errorf("%s or its limits are not root's", dir)
			}
			if asTenant(uid, "mkdir "+dir+"/mine") == nil {
				t.Errorf("the tenant made a group of its own in %s", dir)
			}
		}
	}
	if asTenant(uid, "echo 100000 > "+task.Dir(cgroups.Pids)+"/pids.max") == nil || pids(task) != "100" {
		t.Errorf("the tenant raised its task's pids.max to %s", pids(task))
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	s.ack(s.update("t1"))
	eventually(t, "the ended task's group to be removed", func() bool { return !task.Exists() })
	if got := pids(g); got != "200" {
		t.Errorf("container pids.max %q after t1 ended, want 200", got)
	}
}

// owner is the uid owning p (-1 when unreadable).
func owner(t *testing.T, p string) int {
	st, err := os.Lstat(p)
	if err != nil {
		return -1
	}
	return int(st.Sys().(*syscall.Stat_t).Uid)
}

// asTenant runs a shell command as uid.
func asTenant(uid int, script string) error {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return cmd.Run()
}
