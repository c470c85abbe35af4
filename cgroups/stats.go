package cgroups

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Stats are a group's counters. Values a kernel does not report are -1.
type Stats struct {
	MemoryUsage int64 // bytes, now
	MemoryLimit int64 // bytes; 0: unlimited
	// OOMKills counts processes the OOM killer killed because the group hit
	// its memory limit (v1 memory.oom_control oom_kill, v2 memory.events
	// oom_kill).
	OOMKills int64
	// MemoryMaxHits counts allocations that hit the limit (v1
	// memory.failcnt, v2 memory.events max).
	MemoryMaxHits int64
	CPUUsage      time.Duration // CPU time used (v1 cpuacct.usage, v2 cpu.stat usage_usec)
	Periods       int64         // CFS periods with runnable tasks
	Throttled     int64         // periods in which the group was throttled
	ThrottledTime time.Duration
	Pids          int64 // processes and threads now
	PidsDenied    int64 // forks refused by the pids limit (pids.events max)
}

// Stats reads the group's counters.
func (g *Group) Stats() Stats {
	s := Stats{MemoryUsage: -1, MemoryLimit: -1, OOMKills: -1, MemoryMaxHits: -1, CPUUsage: -1,
		Periods: -1, Throttled: -1, ThrottledTime: -1, Pids: -1, PidsDenied: -1}
	if g.h.mode == V1 {
		g.statsV1(&s)
	} else {
		g.statsV2(&s)
	}
	if g.h.Has(Pids) {
		s.Pids = readInt(g.Dir(Pids), "pids.current")
		s.PidsDenied = readKeyed(g.Dir(Pids), "pids.events")["max"]
	}
	return s
}

// OOMKills reads only the group's OOM kill count (Stats.OOMKills): one
// file, where Stats reads eight.
func (g *Group) OOMKills() int64 {
	if g.h.mode == V1 {
		if n, ok := readKeyedOK(g.Dir(Memory), "memory.oom_control", "oom_kill"); ok {
			return n
		}
		return -1
	}
	return orUnknown(readKeyed(g.Dir(Memory), "memory.events"), "oom_kill")
}

func (g *Group) statsV1(s *Stats) {
	mem := g.Dir(Memory)
	s.MemoryUsage = readInt(mem, "memory.usage_in_bytes")
	if s.MemoryLimit = readInt(mem, "memory.limit_in_bytes"); s.MemoryLimit >= 1<<62 {
		s.MemoryLimit = 0
	}
	s.MemoryMaxHits = readInt(mem, "memory.failcnt")
	if n, ok := readKeyedOK(mem, "memory.oom_control", "oom_kill"); ok {
		s.OOMKills = n
	}
	if g.h.Has(CPUAcct) {
		if ns := readInt(g.Dir(CPUAcct), "cpuacct.usage"); ns >= 0 {
			s.CPUUsage = time.Duration(ns)
		}
	}
	st := readKeyed(g.Dir(CPU), "cpu.stat")
	s.Periods, s.Throttled = orUnknown(st, "nr_periods"), orUnknown(st, "nr_throttled")
	if ns, ok := st["throttled_time"]; ok {
		s.ThrottledTime = time.Duration(ns)
	}
}

func (g *Group) statsV2(s *Stats) {
	mem := g.Dir(Memory)
	s.MemoryUsage = readInt(mem, "memory.current")
	s.MemoryLimit = readInt(mem, "memory.max") // "max" reads as -1 …
	if s.MemoryLimit < 0 {
		s.MemoryLimit = 0 // … unlimited
	}
	ev := readKeyed(mem, "memory.events")
	s.OOMKills, s.MemoryMaxHits = orUnknown(ev, "oom_kill"), orUnknown(ev, "max")
	st := readKeyed(g.Dir(CPU), "cpu.stat")
	if us, ok := st["usage_usec"]; ok {
		s.CPUUsage = time.Duration(us) * time.Microsecond
	}
	s.Periods, s.Throttled = orUnknown(st, "nr_periods"), orUnknown(st, "nr_throttled")
	if us, ok := st["throttled_usec"]; ok {
		s.ThrottledTime = time.Duration(us) * time.Microsecond
	}
}

// OOMKilledSince reports whether the OOM killer struck in the group after
// before was read.
func (s Stats) OOMKilledSince(before Stats) bool {
	if s.OOMKills >= 0 && before.OOMKills >= 0 {
		return s.OOMKills > before.OOMKills
	}
	return false
}

func orUnknown(m map[string]int64, k string) int64 {
	if v, ok := m[k]; ok {
		return v
	}
	return -1
}

// readInt reads a file holding one integer; -1 when it cannot.
func readInt(dir, file string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// readKeyed reads a flat keyed file ("key value" lines).
func readKeyed(dir, file string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(filepath.Join(dir, file))
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(s.Text()), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

func readKeyedOK(dir, file, key string) (int64, bool) {
	v, ok := readKeyed(dir, file)[key]
	return v, ok
}
