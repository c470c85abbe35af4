package cgroups

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Controller names.
const (
	Memory  = "memory"
	CPU     = "cpu"
	CPUAcct = "cpuacct"
	Pids    = "pids"
)

// known are the controllers this package uses, required ones first.
var known = []string{Memory, CPU, CPUAcct, Pids}

// mounts is what /proc/self/mountinfo says about cgroup file systems.
type mounts struct {
	v2 string            // mount point of the first cgroup2 file system, "" if none
	v1 map[string]string // controller → mount point of its v1 hierarchy
}

// parseMountinfo reads mountinfo (proc(5)): "id parent maj:min root
// mountpoint options [optional...] - fstype source superoptions".
func parseMountinfo(r io.Reader) (mounts, error) {
	m := mounts{v1: map[string]string{}}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			return m, fmt.Errorf("cgroups: malformed mountinfo line %q", s.Text())
		}
		point := unescape(f[4])
		switch g[0] {
		case "cgroup2":
			if m.v2 == "" {
				m.v2 = point
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				for _, c := range known {
					if opt == c && m.v1[c] == "" {
						m.v1[c] = point
					}
				}
			}
		}
	}
	return m, s.Err()
}

// unescape decodes the octal escapes (\040 for a space) of mountinfo paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
