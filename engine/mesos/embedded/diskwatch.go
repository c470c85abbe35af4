package embedded

import (
	"fmt"
	"strings"
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
	hidden      int64 // bytes of used in files removed that its processes hold
	dir         string
	pid         int
	ns          string // its tenant's group name; "": none
}

// group is what one tenant holds on the disk in a pass: its live
// sandboxes and its app cache, which a task writes into too (bound
// read-write into its executor's mounts), so it counts against the
// tenant's cap and its share of a full disk.
type group struct {
	name    string // the tenant's group name; a run's sandbox when it has no tenant
	used    int64  // bytes: its sandboxes' and its cache's
	cache   int64  // bytes of used that are its cache's
	largest *measured
	// cacheShort says why its cache could not be measured ("": it was).
	cacheShort string
}

// groups sums runs by tenant, with each tenant's app cache measured once.
// A run without a tenant is a group of its own.
func (c *Cluster) groups(runs []measured, caches map[string]string) []*group {
	by := map[string]*group{}
	var out []*group
	for i := range runs {
		r := &runs[i]
		key := r.ns
		if key == "" {
			key = r.dir
		}
		g := by[key]
		if g == nil {
			g = &group{name: key}
			by[key] = g
			out = append(out, g)
			if dir := caches[r.ns]; dir != "" {
				if used, short, err := du(dir, duBudget); err == nil {
					g.used, g.cache, g.cacheShort = used, used, short
				}
			}
		}
		g.used += r.used
		if g.largest == nil || r.used > g.largest.used {
			g.largest = r
		}
	}
	return out
}

// capNamespaces kills, for each tenant whose live sandboxes and app cache
// together hold more than its disk cap (Config.NamespaceCaps, else
// NamespaceDiskMB), the executor with its
// largest sandbox (one a pass: the next pass measures again).
func (c *Cluster) capNamespaces(groups []*group) int {
	killed := 0
	for _, g := range groups {
		if g.largest.ns == "" {
			continue
		}
		limit := mib(float64(capsOf(c.cfg, g.largest.ns).DiskMB))
		if limit > 0 && g.used > limit {
			killed += c.killForDisk(*g.largest, fmt.Sprintf("the namespace's sandboxes and app cache used %d MB of its %d MB disk cap (the cache %d MB); this sandbox, the largest, %d MB",
				g.used>>20, limit>>20, g.cache>>20, g.largest.used>>20))
		}
	}
	return killed
}

// WatchDisk measures every live executor's sandbox, as Mesos' disk/du
// isolator does, and its tenant's app cache, and kills the executors
// (their tasks fail with REASON_CONTAINER_LIMITATION_DISK) whose sandbox
// is over its limit: what the executor and its tasks declare as disk,
// else Config.SandboxDiskMB; and the largest sandbox of a tenant over
// Config.NamespaceDiskMB. When the file system under the work directory
// (the scheduler's data directory's too) has less than
// Config.DiskHeadroomMB free, it also kills the largest sandbox's executor
// of the tenant that holds the most (sandboxes and cache), if that is at
// least the headroom, so that a team filling the disk, its cache
// included, does not stop the registry's commits, and never costs another
// team its sandbox (the sandbox's files stay for its logs; the collector,
// which keeps sandboxes for less time as the disk fills, removes them).
// It returns the executors killed.
func (c *Cluster) WatchDisk() int {
	c.mu.Lock()
	var runs []measured
	caches := map[string]string{}
	for dir, e := range c.live {
		if e.pid > 0 && e.state != execTerminated {
			runs = append(runs, measured{e: e, dir: dir, pid: e.pid, limit: mib(c.diskLimitMB(e)), ns: e.nsGroup})
			if c.cacheRoot != "" && e.nsGroup != "" {
				caches[e.nsGroup] = tenantCache(c.cacheRoot, strings.TrimPrefix(e.nsGroup, nsPrefix))
			}
		}
	}
	c.mu.Unlock()
	var measuredRuns []measured
	var doomed []measured
	var whys []string // why each of doomed is
	procs := containerProcs(runs)
	for _, r := range runs {
		used, short, err := du(r.dir, duBudget)
		if err != nil {
			continue // gone meanwhile
		}
		// What its processes hold of files they removed is the sandbox's too (held_linux.go).
		hidden, hshort := held(r.dir, procs[r.dir])
		r.used, r.hidden = used+hidden, hidden
		if short == "" {
			short = hshort
		}
		switch {
		case short != "" && c.measures(r.limit, r.ns):
			doomed = append(doomed, r)
			whys = append(whys, unmeasurable("sandbox", short))
		case r.limit > 0 && r.used > r.limit:
			doomed = append(doomed, r)
			why := fmt.Sprintf("sandbox used %d MB of its %d MB disk limit", r.used>>20, r.limit>>20)
			if r.hidden > 0 {
				why += fmt.Sprintf(" (%d MB in files removed that its processes hold open)", r.hidden>>20)
			}
			whys = append(whys, why)
		}
		measuredRuns = append(measuredRuns, r)
	}
	killed := 0
	for i, r := range doomed {
		killed += c.killForDisk(r, whys[i])
	}
	groups := c.groups(measuredRuns, caches)
	for _, g := range groups {
		if g.cacheShort != "" && c.measures(0, g.largest.ns) {
			killed += c.killForDisk(*g.largest, unmeasurable("namespace's app cache", g.cacheShort)+"; this sandbox is its largest")
		}
	}
	killed += c.capNamespaces(groups)
	var top *group
	for _, g := range groups {
		if top == nil || g.used > top.used {
			top = g
		}
	}
	if headroom := mib(float64(c.cfg.DiskHeadroomMB)); headroom > 0 && top != nil {
		free, err := c.cfg.DiskFree(c.cfg.WorkDir)
		switch {
		case err != nil || free >= headroom:
		case top.used < headroom:
			// No tenant holds as much: killing one every pass would not
			// give the space back.
			c.log.Error("DISK ALMOST FULL under the scheduler's data, and no tenant's sandboxes and cache hold as much as the headroom: not a task's doing",
				"free_mb", free>>20, "headroom_mb", headroom>>20, "largest_mb", top.used>>20)
		default:
			largest := top.largest
			c.log.Error("DISK ALMOST FULL under the sandboxes and the scheduler's data: killing the largest sandbox's executor of the tenant that holds the most",
				"free_mb", free>>20, "headroom_mb", headroom>>20, "tenant", top.name, "tenant_mb", top.used>>20, "cache_mb", top.cache>>20,
				"sandbox", largest.dir, "sandbox_mb", largest.used>>20)
			why := fmt.Sprintf("sandbox used %d MB, the most on a disk left with %d MB free, below the %d MB the scheduler keeps free for its data",
				largest.used>>20, free>>20, headroom>>20)
			if top.cache > 0 {
				why = fmt.Sprintf("the namespace's sandboxes and app cache used %d MB (the cache %d MB, this sandbox, its largest, %d MB), the most on a disk left with %d MB free, below the %d MB the scheduler keeps free for its data",
					top.used>>20, top.cache>>20, largest.used>>20, free>>20, headroom>>20)
			}
			killed += c.killForDisk(*largest, why)
		}
	}
	return killed
}

// unmeasurable is the end of a task whose sandbox or app cache the
// watcher could not measure: a tree a task made past what a pass reads
// (its entries or its depth) would otherwise hide what lies beyond from
// every limit, and exhaust the file system's inodes unseen.
func unmeasurable(what, why string) string {
	return fmt.Sprintf("the %s could not be measured: %s (the disk watcher reads at most %d entries and %d directories deep)",
		what, why, duBudget, maxDuDepth)
}

// measures says whether any disk bound applies to a sandbox of limit
// bytes in tenant group ns: its own limit, its namespace's cap, or the
// headroom. What the watcher cannot measure then evades them all, so it
// is stopped; with none, nothing is measured for, and it runs on.
func (c *Cluster) measures(limit int64, ns string) bool {
	return limit > 0 || c.cfg.DiskHeadroomMB > 0 || ns != "" && capsOf(c.cfg, ns).DiskMB > 0
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
	e.signalGroup(syscall.SIGKILL)
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
