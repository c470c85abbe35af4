package cgroups_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
	"github.com/ejcloud/elasticjob/executor/process"
)

// The cost of a task's cgroup around a trivial process: create it with
// limits, start `true` in it through the prelude, destroy it. Compare with
// BenchmarkPlainStart. Needs root.
func BenchmarkTaskCgroupLifecycle(b *testing.B) { lifecycle(b, 0, false) }

// The same, the process started as the executor starts tasks in v1: forked
// by a thread that steps into the group and back (process.Spec.Join), no
// /bin/sh in between.
func BenchmarkTaskCgroupLifecycleThreadJoin(b *testing.B) { lifecycle(b, 0, true) }

// The same with 100 ms between tasks, as when tasks start now and then:
// joining a group then waits for an RCU grace period (the kernel's
// cgroup_threadgroup_rwsem, unless CONFIG_CGROUP_FAVOR_DYNMODS or the
// favordynmods mount option), which back-to-back joins share.
func BenchmarkTaskCgroupLifecycleSpaced(b *testing.B) { lifecycle(b, 100*time.Millisecond, false) }

// The thread join spaced out: the thread writes "0" (itself) to the tasks
// files, which spares it the RCU wait too; a thread id would not.
func BenchmarkTaskCgroupLifecycleThreadJoinSpaced(b *testing.B) {
	lifecycle(b, 100*time.Millisecond, true)
}

func lifecycle(b *testing.B, gap time.Duration, thread bool) {
	h, g := cgroupstest.Require(b)
	var leave []string
	if thread {
		if h.Mode() != cgroups.V1 {
			b.Skip("thread join is for cgroup v1")
		}
		var err error
		if leave, err = h.SelfTasksFiles(""); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	var create, run, destroy time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		c := g.Child(fmt.Sprintf("t%d", i))
		if err := c.Create(); err != nil {
			b.Fatal(err)
		}
		if err := c.SetLimits(cgroups.Limits{MemoryBytes: 64 << 20, CPUs: 0.1, Pids: 100}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if thread {
			spec := process.Spec{Path: "/bin/true", Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err"),
				Join: c.TasksFiles(), Leave: leave}
			if res, err := process.Run(context.Background(), spec, nil); err != nil || res.Message() != "" {
				b.Fatal(err, res.Message())
			}
		} else {
			argv := c.Argv([]string{"/bin/true"})
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		if err := c.Destroy(10 * time.Second); err != nil {
			b.Fatal(err)
		}
		create, run, destroy = create+t1.Sub(t0), run+t2.Sub(t1), destroy+time.Since(t2)
		time.Sleep(gap)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((create / n).Microseconds()), "create-µs/op")
	b.ReportMetric(float64((run / n).Microseconds()), "run-µs/op")
	b.ReportMetric(float64((destroy / n).Microseconds()), "destroy-µs/op")
}

func BenchmarkPlainStart(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
