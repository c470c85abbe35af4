package cgroups

import (
	"errors"
	"math"
	"strconv"
)

// CFSPeriod is the CFS bandwidth period, in microseconds (100 ms, the
// kernel's default).
const CFSPeriod = 100_000

// minQuota is the smallest CFS quota the kernel accepts (1 ms).
const minQuota = 1000

// Limits are what a group may use. Zero fields are left unlimited.
type Limits struct {
	MemoryBytes int64   // hard memory limit
	CPUs        float64 // CPU shares (v1) / weight (v2) in proportion, and the quota
	CPUQuota    bool    // also cap CPU time at CPUs per period (CFS bandwidth control)
	Pids        int64   // most processes and threads
}

// Shares is the v1 cpu.shares for cpus (1024 per CPU, at least 2).
func Shares(cpus float64) int64 { return max(2, int64(math.Round(cpus*1024))) }

// Weight is the v2 cpu.weight equivalent of Shares (the conversion
// container runtimes use).
func Weight(cpus float64) int64 { return 1 + (Shares(cpus)-2)*9999/262142 }

// Quota is the CFS quota in microseconds per CFSPeriod for cpus.
func Quota(cpus float64) int64 { return max(minQuota, int64(math.Round(cpus*CFSPeriod))) }

// SetLimits writes l. It returns the errors of the writes that failed
// (e.g. a memory limit below what the group uses now) after trying all.
func (g *Group) SetLimits(l Limits) error {
	var errs []error
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.written == nil {
		g.written = map[string]string{}
	}
	set := func(c, file, v string) {
		if !g.h.Has(c) || g.written[c+"/"+file] == v { // a limit rewritten unchanged costs syscalls per task
			return
		}
		err := write(g.Dir(c), file, v)
		if err == nil {
			g.written[c+"/"+file] = v
		}
		errs = append(errs, err)
	}
	v1 := g.h.mode == V1
	if l.MemoryBytes > 0 {
		if v1 {
			set(Memory, "memory.limit_in_bytes", itoa(l.MemoryBytes))
		} else {
			set(Memory, "memory.max", itoa(l.MemoryBytes))
		}
	}
	if l.CPUs > 0 {
		quota := "-1"
		if l.CPUQuota {
			quota = itoa(Quota(l.CPUs))
		}
		if v1 {
			set(CPU, "cpu.shares", itoa(Shares(l.CPUs)))
			set(CPU, "cpu.cfs_period_us", itoa(CFSPeriod))
			set(CPU, "cpu.cfs_quota_us", quota)
		} else {
			if quota == "-1" {
				quota = "max"
			}
			set(CPU, "cpu.weight", itoa(Weight(l.CPUs)))
			set(CPU, "cpu.max", quota+" "+itoa(CFSPeriod))
		}
	}
	if l.Pids > 0 {
		set(Pids, "pids.max", itoa(l.Pids))
	}
	return errors.Join(errs...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
