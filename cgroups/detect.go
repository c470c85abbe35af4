package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is the form of cgroups in use.
type Mode string

const (
	Off Mode = "off"
	V1  Mode = "v1"
	V2  Mode = "v2"
	// Auto asks Detect for v2 when usable, else v1.
	Auto Mode = "auto"
)

// ErrUnavailable is wrapped by Detect's errors: no usable cgroups.
var ErrUnavailable = errors.New("cgroups: unavailable")

// Hierarchy is a usable cgroup file system (v2) or set of them (v1).
type Hierarchy struct {
	mode        Mode
	dirs        map[string]string // controller → mount point (v2: the same for all)
	controllers []string
}

// Mode is V1 or V2.
func (h *Hierarchy) Mode() Mode { return h.mode }

// Controllers are the controllers in use, in a fixed order (memory, cpu,
// cpuacct, pids).
func (h *Hierarchy) Controllers() []string { return slices.Clone(h.controllers) }

// Has reports whether controller c is in use.
func (h *Hierarchy) Has(c string) bool { return slices.Contains(h.controllers, c) }

// Mountpoint is where controller c is mounted ("" if not in use).
func (h *Hierarchy) Mountpoint(c string) string { return h.dirs[c] }

// Probe says what Detect looks for.
type Probe struct {
	Want Mode   // Auto (""), V1 or V2
	Root string // cgroups root below the hierarchy root, e.g. "elasticjob"; created by Detect
	// Mountinfo is the mount table to read (default /proc/self/mountinfo).
	Mountinfo string
}

// Detect finds a usable hierarchy: the wanted mode, or with Auto v2 then
// v1. Usable means the memory and cpu controllers are there and the root
// group could be created (so we may write). The error, wrapping
// ErrUnavailable, says why nothing was usable.
func Detect(p Probe) (*Hierarchy, error) {
	if p.Mountinfo == "" {
		p.Mountinfo = "/proc/self/mountinfo"
	}
	f, err := os.Open(p.Mountinfo)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	m, err := parseMountinfo(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var why []string
	if p.Want == "" || p.Want == Auto || p.Want == V2 {
		h, err := detectV2(m, p.Root)
		if err == nil {
			return h, nil
		}
		why = append(why, "cgroup v2: "+err.Error())
	}
	if p.Want == "" || p.Want == Auto || p.Want == V1 {
		h, err := detectV1(m, p.Root)
		if err == nil {
			return h, nil
		}
		why = append(why, "cgroup v1: "+err.Error())
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("%w: unknown mode %q (want auto, v1 or v2)", ErrUnavailable, p.Want)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(why, "; "))
}

func detectV2(m mounts, root string) (*Hierarchy, error) {
	if m.v2 == "" {
		return nil, errors.New("not mounted")
	}
	b, err := os.ReadFile(filepath.Join(m.v2, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	avail := strings.Fields(string(b))
	h := &Hierarchy{mode: V2, dirs: map[string]string{}}
	for _, c := range known {
		if c == CPUAcct { // v2 accounts CPU in cpu.stat of the cpu controller
			continue
		}
		if slices.Contains(avail, c) {
			h.controllers = append(h.controllers, c)
			h.dirs[c] = m.v2
		}
	}
	if !h.Has(Memory) || !h.Has(CPU) {
		return nil, fmt.Errorf("%s offers controllers %q, need memory and cpu (they may be bound to v1 hierarchies)", m.v2, strings.Join(avail, " "))
	}
	if err := h.Group("").enableSubtree(); err != nil {
		return nil, err
	}
	if err := h.Group(root).Create(); err != nil {
		return nil, err
	}
	return h, nil
}

func detectV1(m mounts, root string) (*Hierarchy, error) {
	h := &Hierarchy{mode: V1, dirs: map[string]string{}}
	for _, c := range known {
		if d, ok := m.v1[c]; ok {
			h.controllers = append(h.controllers, c)
			h.dirs[c] = d
		}
	}
	if !h.Has(Memory) || !h.Has(CPU) {
		return nil, fmt.Errorf("memory and cpu hierarchies are not both mounted (found %q)", strings.Join(h.controllers, ","))
	}
	if err := h.Group(root).Create(); err != nil {
		return nil, err
	}
	return h, nil
}

// Open finds the mounted hierarchy of mode without creating anything: for
// a process handed a group by its parent (the executor, by the agent).
func Open(mode Mode, mountinfo string) (*Hierarchy, error) {
	if mountinfo == "" {
		mountinfo = "/proc/self/mountinfo"
	}
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	m, err := parseMountinfo(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	h := &Hierarchy{mode: mode, dirs: map[string]string{}}
	switch mode {
	case V1:
		for _, c := range known {
			if d, ok := m.v1[c]; ok {
				h.controllers = append(h.controllers, c)
				h.dirs[c] = d
			}
		}
	case V2:
		b, _ := os.ReadFile(filepath.Join(m.v2, "cgroup.controllers"))
		for _, c := range known {
			if m.v2 != "" && c != CPUAcct && slices.Contains(strings.Fields(string(b)), c) {
				h.controllers = append(h.controllers, c)
				h.dirs[c] = m.v2
			}
		}
	default:
		return nil, fmt.Errorf("%w: unknown mode %q", ErrUnavailable, mode)
	}
	if !h.Has(Memory) || !h.Has(CPU) {
		return nil, fmt.Errorf("%w: no %s memory and cpu controllers mounted", ErrUnavailable, mode)
	}
	return h, nil
}

// ParseSpec reads "v1:/path" or "v2:/path", the form Spec writes.
func ParseSpec(s string) (Mode, string, error) {
	m, p, ok := strings.Cut(s, ":")
	if !ok || (Mode(m) != V1 && Mode(m) != V2) || !strings.HasPrefix(p, "/") {
		return "", "", fmt.Errorf("cgroups: %q is not v1:/path or v2:/path", s)
	}
	return Mode(m), p, nil
}

// Spec names g for another process: "v1:/elasticjob/S0/c1".
func (g *Group) Spec() string { return string(g.h.mode) + ":" + g.Path() }
