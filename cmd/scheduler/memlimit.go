package main

import (
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/config"
)

// autoMemoryShare is the share of the cgroup's memory limit memory_limit=auto
// gives the Go runtime: the rest is for what Go does not count (mapped
// files, the C allocations of nothing here, the kernel's buffers).
const autoMemoryShare = 0.9

// setMemoryLimit applies memory_limit: a size as it is; auto as 90 % of
// the cgroup's memory limit found from procCgroup under cgroupRoot, unless
// GOMEMLIMIT is set or there is no limit. It returns the limit set (0: none).
func setMemoryLimit(cfg config.Config, getenv func(string) (string, bool), procCgroup, cgroupRoot string, log *slog.Logger) int64 {
	limit := cfg.MemoryLimit
	if cfg.MemoryLimitAuto {
		if _, ok := getenv("GOMEMLIMIT"); ok {
			return 0
		}
		max, ok := cgroupMemoryMax(procCgroup, cgroupRoot)
		if !ok {
			return 0
		}
		limit = int64(float64(max) * autoMemoryShare)
		log.Info("memory_limit=auto: the Go runtime's soft memory limit from the cgroup's", "cgroup_limit_bytes", max, "limit_bytes", limit)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit
}

// cgroupMemoryMax is the lowest memory limit of the process's cgroup and
// its ancestors, read from procCgroup (/proc/self/cgroup) under cgroupRoot
// (/sys/fs/cgroup): memory.max in v2, memory/…/memory.limit_in_bytes in
// v1. ok false when none is set or none can be read.
func cgroupMemoryMax(procCgroup, cgroupRoot string) (int64, bool) {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return 0, false
	}
	var dir, file string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[0] == "0" && parts[1] == "" && file == "": // v2, unless v1's memory controller is listed
			dir, file = parts[2], "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = path.Join("/memory", parts[2]), "memory.limit_in_bytes"
		}
	}
	if file == "" {
		return 0, false
	}
	best, found := int64(0), false
	for d := path.Clean("/" + dir); ; d = path.Dir(d) {
		if n, ok := readLimit(filepath.Join(cgroupRoot, filepath.FromSlash(d), file)); ok && (!found || n < best) {
			best, found = n, true
		}
		if d == "/" || d == "/memory" {
			break
		}
	}
	return best, found
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// readLimit reads a limit file: "max" (v2) or a value from 2^62 up (v1's
// "unlimited") is no limit.
func readLimit(name string) (int64, bool) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}

// The collector's headroom follows the instance's role (GOGC: how far the
// heap grows past what is live before the next collection). A leader keeps
// Go's 100: its launch path allocates fast, and a collection twice as
// often cost it ≈ 40 % more CPU per launch at 1.3 × its live heap
// (docs/benchmarks.md, "Leader memory at 100,000 jobs"). A standby only
// applies the leader's changes and serves reads, so it collects at 1.5 ×
// its live heap: collections twice as often on a process that allocates
// little, for a heap that peaks at 1.5 × what is live instead of 2 × on
// each of the replicas that are not leading.
const (
	leaderGCPercent  = 100
	standbyGCPercent = 50
)

// gcHeadroom sets the collector's percentage for the instance's role
// unless GOGC is set (the operator's choice is kept).
type gcHeadroom struct {
	set func(percent int) int // debug.SetGCPercent
	off bool                  // GOGC is set
}

func newGCHeadroom(getenv func(string) (string, bool)) gcHeadroom {
	_, set := getenv("GOGC")
	return gcHeadroom{set: debug.SetGCPercent, off: set}
}

// leading applies the leader's headroom (on) or the standby's.
func (g gcHeadroom) leading(on bool) {
	if g.off {
		return
	}
	if on {
		g.set(leaderGCPercent)
	} else {
		g.set(standbyGCPercent)
	}
}
