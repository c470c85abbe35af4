package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/sandboxgc"
)

// DefaultDiskWatchInterval is how often sandboxes are collected.
const DefaultDiskWatchInterval = time.Minute

// gcLoop collects garbage at start and every DiskWatchInterval until stop
// is closed.
func (c *Cluster) gcLoop(stop <-chan struct{}) {
	defer c.bg.Done()
	t := c.cfg.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		c.CollectGarbage()
		t.Reset(c.cfg.DiskWatchInterval)
	}
}

// CollectGarbage removes the sandboxes of terminated executors older than
// sandboxgc.MaxAge for the current disk usage, oldest first, and returns how many it
// removed. A running executor's sandbox (its tasks may be running) is never
// removed. Sandboxes of earlier agent ids in the work directory count too.
func (c *Cluster) CollectGarbage() int {
	c.gcMu.Lock() // one collection at a time
	defer c.gcMu.Unlock()
	usage, err := c.cfg.DiskUsage(c.cfg.WorkDir)
	if err != nil {
		c.log.Warn("disk usage unknown; sandboxes are collected by age only", "err", err)
		usage = 0
	}
	maxAge := sandboxgc.MaxAge(c.cfg.GCDelay, c.cfg.GCDiskHeadroom, usage)
	var runs []archived
	agents, _ := os.ReadDir(c.sandboxRoot())
	for _, a := range agents {
		runs = append(runs, scanRuns(filepath.Join(c.sandboxRoot(), a.Name()))...)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ended.Before(runs[j].ended) })
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	doomed := doomedSandboxes(runs, c.live, maxAge, now)
	c.mu.Unlock()
	removed := map[string]bool{}
	for _, d := range doomed { // terminated for good: no executor takes its path again
		if err := removeTree(d); err != nil {
			c.log.Warn("sandbox not removed", "dir", d, "err", err)
			continue
		}
		removed[d] = true
		pruneEmpty(filepath.Dir(d), c.sandboxRoot())
	}
	c.mu.Lock()
	c.forget(removed)
	c.mu.Unlock()
	if len(removed) > 0 {
		c.log.Info("removed sandboxes of terminated executors", "count", len(removed), "max_age", maxAge,
			"disk_usage", fmt.Sprintf("%.3f", usage))
	}
	return len(removed)
}

// doomedSandboxes picks the sandboxes a collection removes, in the order
// of runs: those no live executor runs in (every live executor is
// registered before its sandbox exists) that ended at least maxAge ago.
func doomedSandboxes(runs []archived, live map[string]*executor, maxAge time.Duration, now time.Time) []string {
	var doomed []string
	for _, r := range runs {
		if live[r.dir] == nil && now.Sub(r.ended) >= maxAge {
			doomed = append(doomed, r.dir)
		}
	}
	return doomed
}

// pruneEmpty removes dir and its parents up to (not including) stop while
// they hold nothing but a dangling "latest" link.
func pruneEmpty(dir, stop string) {
	for dir != stop && len(dir) > len(stop) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Name() != "latest" || e.Type()&os.ModeSymlink == 0 {
				return
			}
			if _, err := os.Stat(filepath.Join(dir, "latest")); err == nil {
				return // latest still points at a run
			}
		}
		_ = os.Remove(filepath.Join(dir, "latest"))
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
