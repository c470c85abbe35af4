package cgroups_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
)

// The cost of a task's cgroup around a trivial process: create it with
// limits, start `true` in it through the prelude, destroy it. Compare with
// BenchmarkPlainStart. Needs root.
func BenchmarkTaskCgroupLifecycle(b *testing.B) {
	_, g := cgroupstest.Require(b)
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
		argv := c.Argv([]string{"/bin/true"})
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := c.Destroy(10 * time.Second); err != nil {
			b.Fatal(err)
		}
		create, run, destroy = create+t1.Sub(t0), run+t2.Sub(t1), destroy+time.Since(t2)
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
