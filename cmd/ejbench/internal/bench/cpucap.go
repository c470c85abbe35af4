package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
)

// CPUCap holds a process to a number of CPUs (CFS bandwidth control of a cgroup of its
// own), so that a benchmark's arms give it the same CPU whatever else they start on the
// machine: a simulated cluster's control plane, which production runs on other machines,
// then takes its CPU from the idle cores rather than from the process measured.
type CPUCap struct {
	g    *cgroups.Group
	CPUs float64
}

// CapCPU moves pid (every thread of it) into a new cgroup limited to cpus.
func CapCPU(pid int, cpus float64) (*CPUCap, error) {
	h, err := cgroups.Detect(cgroups.Probe{Root: "elasticjob-bench"})
	if err != nil {
		return nil, err
	}
	g := h.Group(fmt.Sprintf("elasticjob-bench/cpu-cap-%d", pid))
	if err := g.Create(); err != nil {
		return nil, err
	}
	if err := g.SetLimits(cgroups.Limits{CPUs: cpus, CPUQuota: true}); err != nil {
		_ = g.Remove(time.Second)
		return nil, fmt.Errorf("cpu limit of %g: %w", cpus, err)
	}
	// Under the cap the process must not also be starved below it: the group's weight at the
	// root is that of one thread, against each thread of the processes beside it, so it
	// weighs as many threads' worth instead (a v1 shares or v2 weight of 16 CPUs); the quota
	// alone bounds what it gets.
	weight, file := strconv.FormatInt(cgroups.Shares(16), 10), "cpu.shares"
	if h.Mode() == cgroups.V2 {
		weight, file = strconv.FormatInt(cgroups.Weight(16), 10), "cpu.weight"
	}
	if err := os.WriteFile(filepath.Join(g.Dir(cgroups.CPU), file), []byte(weight), 0); err != nil {
		_ = g.Remove(time.Second)
		return nil, fmt.Errorf("cpu weight: %w", err)
	}
	// cgroup.procs moves the whole thread group; v1 needs it in the cpu hierarchy only.
	procs := filepath.Join(g.Dir(cgroups.CPU), "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0); err != nil {
		_ = g.Remove(time.Second)
		return nil, fmt.Errorf("move %d into %s: %w", pid, procs, err)
	}
	return &CPUCap{g: g, CPUs: cpus}, nil
}

// Periods are the CFS periods so far in which the process was runnable, and in which it
// ran out of its quota.
func (c *CPUCap) Periods() (runnable, throttled int64) {
	st := c.g.Stats()
	return st.Periods, st.Throttled
}

// Release removes the cgroup once the process has ended (it waits up to 5 s for it).
func (c *CPUCap) Release() error {
	if c == nil {
		return nil
	}
	return c.g.Remove(5 * time.Second)
}

// ThrottledTime is how long the group has been held back by its quota, in seconds.
func (c *CPUCap) ThrottledTime() float64 { return c.g.Stats().ThrottledTime.Seconds() }
