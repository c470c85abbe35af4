package embedded

import (
	"fmt"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// DefaultSandboxDiskWatch is how often sandboxes' disk use is measured
// (Mesos' --container_disk_watch_interval).
const DefaultSandboxDiskWatch = 15 * time.Second

// duBudget bounds the entries one sandbox's measure reads per pass.
const duBudget = 1_000_000

// diskLoop measures the live sandboxes every SandboxDiskWatch until stop
// is closed (WatchDisk).
func (c *Cluster) diskLoop(stop <-chan struct{}) {
	defer c.bg.Done()
	t := c.cfg.Clock.NewTimer(c.cfg.SandboxDiskWatch)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		c.WatchDisk()
		t.Reset(c.cfg.SandboxDiskWatch)
	}
}

// measured is one live sandbox's use in a pass.
type measured struct {
	e           *executor
	used, limit int64 // bytes; limit 0: none
	dir         string
	pid         int
	ns          string // its tenant's group name; "": none
}

// capNamespaces kills, for each tenant whose live sandboxes together
// hold more than Config.NamespaceDiskMB, the executor with its largest
// sandbox (one a pass: the next pass measures again).
func (c *Cluster) capNamespaces(runs []measured) int {
	limit := mib(float64(c.cfg.NamespaceDiskMB))
	if limit <= 0 {
		return 0
	}
	total := map[string]int64{}
	largest := map[string]measured{}
	for _, r := range runs {
		if r.ns == "" {
			continue
		}
		total[r.ns] += r.used
		if r.used > largest[r.ns].used {
			largest[r.ns] = r
		}
	}
	killed := 0
	for ns, used := range total {
		if used > limit {
			r := largest[ns]
			killed += c.killForDisk(r, fmt.Sprintf("the namespace's sandboxes used %d MB of its %d MB disk cap; this one, the largest, %d MB",
				used>>20, limit>>20, r.used>>20))
		}
	}
	return killed
}

// WatchDisk measures every live executor's sandbox, as Mesos' disk/du
// isolator does, and kills the executors (their tasks fail with
// REASON_CONTAINER_LIMITATION_DISK) whose sandbox is over its limit: what
// the executor and its tasks declare as disk, else Config.SandboxDiskMB.
// When the file system under the work directory (the scheduler's data
// directory's too) has less than Config.DiskHeadroomMB free, it also kills
// the executor with the largest sandbox, if that holds at least the
// headroom, so that a team filling the disk does not stop the registry's
// commits (the sandbox's files stay for its logs; the collector, which
// keeps sandboxes for less time as the disk fills, removes them). It
// returns the executors killed.
func (c *Cluster) WatchDisk() int {
	c.mu.Lock()
	var runs []measured
	for dir, e := range c.live {
		if e.pid > 0 && e.state != execTerminated {
			runs = append(runs, measured{e: e, dir: dir, pid: e.pid, limit: mib(c.diskLimitMB(e)), ns: e.nsGroup})
		}
	}
	c.mu.Unlock()
	var largest *measured
	var doomed []measured
	for i := range runs {
		r := &runs[i]
		used, _, err := du(r.dir, duBudget)
		if err != nil {
			continue // gone meanwhile
		}
		r.used = used
		if r.limit > 0 && used > r.limit {
			doomed = append(doomed, *r)
		} else if largest == nil || used > largest.used {
			largest = r
		}
	}
	killed := 0
	for _, r := range doomed {
		killed += c.killForDisk(r, fmt.Sprintf("sandbox used %d MB of its %d MB disk limit", r.used>>20, r.limit>>20))
	}
	killed += c.capNamespaces(runs)
	if headroom := mib(float64(c.cfg.DiskHeadroomMB)); headroom > 0 && largest != nil {
		free, err := c.cfg.DiskFree(c.cfg.WorkDir)
		switch {
		case err != nil || free >= headroom:
		case largest.used < headroom:
			// No sandbox is big enough to be the cause: killing one every
			// pass would not give the space back.
			c.log.Error("DISK ALMOST FULL under the scheduler's data, and no sandbox holds as much as the headroom: not a task's doing",
				"free_mb", free>>20, "headroom_mb", headroom>>20, "largest_sandbox_mb", largest.used>>20)
		default:
			c.log.Error("DISK ALMOST FULL under the sandboxes and the scheduler's data: killing the largest sandbox's executor",
				"free_mb", free>>20, "headroom_mb", headroom>>20, "sandbox", largest.dir, "sandbox_mb", largest.used>>20)
			killed += c.killForDisk(*largest, fmt.Sprintf(
				"sandbox used %d MB, the most on a disk left with %d MB free, below the %d MB the scheduler keeps free for its data",
				largest.used>>20, free>>20, headroom>>20))
		}
	}
	return killed
}

// diskLimitMB is e's sandbox limit: the disk it and its live tasks
// declare, else Config.SandboxDiskMB (0: none).
func (c *Cluster) diskLimitMB(e *executor) float64 {
	d := scalarSum(e.resources, "disk")
	for _, t := range e.tasks {
		if !t.released {
			d += scalarSum(t.resources, "disk")
		}
	}
	if d > 0 {
		return d
	}
	return float64(c.cfg.SandboxDiskMB)
}

// killForDisk kills r's executor, still the same run, and has its end
// say why.
func (c *Cluster) killForDisk(r measured, why string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := r.e
	if e.state == execTerminated || e.pid != r.pid || e.limitation != "" {
		return 0
	}
	c.log.Warn("executor killed for its sandbox's disk", "executor_id", e.id, "sandbox", r.dir, "why", why)
	e.limitation = why
	e.reason = mesos.REASON_CONTAINER_LIMITATION_DISK
	signalGroup(e.pid, syscall.SIGKILL)
	return 1
}

// diskFree is the space unprivileged writers may still use on path's file
// system.
func diskFree(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
