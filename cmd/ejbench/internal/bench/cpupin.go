package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPUPin keeps processes on some of the machine's CPUs (a cpuset cgroup of their own,
// cgroup v1). A benchmark pins the process it measures to a CPU of its own and everything
// else it starts to the others, so that what production runs on other machines (a
// simulated cluster's control plane) takes no CPU time from the process measured; a CPU
// quota alone (CPUCap) bounds what the process gets, not that it gets it when it is
// runnable.
type CPUPin struct {
	dir  string
	root string // the hierarchy's root cpuset, where Release moves what is left
}

// SplitCPUs names the last CPU (the measured process's) and the others (the rest's), as
// cpuset.cpus lists them; an error if the machine has fewer than two.
func SplitCPUs() (own, rest string, err error) {
	n := runtime.NumCPU()
	if n < 2 {
		return "", "", fmt.Errorf("a CPU of its own needs at least 2 CPUs, the machine has %d", n)
	}
	rest = "0"
	if n > 2 {
		rest = fmt.Sprintf("0-%d", n-2)
	}
	return strconv.Itoa(n - 1), rest, nil
}

// PinCPUs moves pid (every thread of it; children it starts later inherit the group) into
// a new cpuset cgroup named name under elasticjob-bench, on cpus.
func PinCPUs(pid int, name, cpus string) (*CPUPin, error) {
	root, err := cpusetMount()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(root, "elasticjob-bench")
	dir := filepath.Join(parent, name)
	for _, d := range []string{parent, dir} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		// A new cpuset has no CPUs and no memory nodes: a process cannot join it until
		// both are set (the parent's, then this one's CPUs).
		up := filepath.Dir(d)
		for _, f := range []string{"cpuset.mems", "cpuset.cpus"} {
			b, err := os.ReadFile(filepath.Join(up, f))
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(d, f), b, 0); err != nil {
				return nil, fmt.Errorf("%s of %s: %w", f, d, err)
			}
		}
	}
	p := &CPUPin{dir: dir, root: root}
	if err := os.WriteFile(filepath.Join(dir, "cpuset.cpus"), []byte(cpus), 0); err != nil {
		_ = p.Release()
		return nil, fmt.Errorf("cpus %q: %w", cpus, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		_ = p.Release()
		return nil, fmt.Errorf("move %d into %s: %w", pid, dir, err)
	}
	return p, nil
}

// Release moves what is still in the group back to the root cpuset and removes the group
// (waiting up to 5 s for exiting processes to leave it).
func (p *CPUPin) Release() error {
	if p == nil {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(p.dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(p.root, "cgroup.procs"), []byte(f), 0) // a process exiting meanwhile is gone anyway
			}
		}
		err := os.Remove(p.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpusetMount is where the v1 cpuset hierarchy is mounted.
func cpusetMount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: ID parent major:minor root mountpoint options ... - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 3 || after[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(after[2], ",") {
			if o == "cpuset" {
				return fields[4], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup v1 cpuset hierarchy is mounted")
}
