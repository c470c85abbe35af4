package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Where the node's CPU goes while pods start (-kube-parts timeline): the CPU seconds the
// cluster's processes (with their reaped children: runc under the shims), the pods' cgroup,
// our scheduler and the whole machine took from a round's start to its last pod Running.
// CPU seconds do not shrink with the machine's load the way wall time grows, so two sides
// can be told apart on a loaded machine.

// cpuParts are the processes counted, by their comm (15 characters at most).
var cpuParts = map[string]string{
	"kubelet": "kubelet", "containerd": "containerd", "containerd-shim": "shims", "kube-apiserver": "apiserver",
	"etcd": "etcd", "kube-scheduler": "kube-sched", "kube-controller": "kcm",
}

// cpuShot is CPU seconds by process (the pods' cgroup and the machine as pids -1, -2) at one
// moment, with each process's part.
type cpuShot map[int]partCPU

type partCPU struct {
	part string
	cpu  float64
}

// takeCPU reads the parts' CPU seconds; ours is our scheduler's pid (0: none).
func takeCPU(ours int) cpuShot {
	s := cpuShot{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		st := string(b)
		open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || end < open {
			continue
		}
		part, ok := cpuParts[st[open+1:end]]
		if pid == ours {
			part, ok = "ours", true
		}
		if !ok {
			continue
		}
		f := strings.Fields(st[end+1:])
		if len(f) < 15 {
			continue
		}
		var sum float64
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			v, _ := strconv.ParseFloat(f[i], 64)
			sum += v
		}
		s[pid] = partCPU{part, sum / bench.ClkTck}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/kubepods/cpuacct.usage"); err == nil {
		ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		s[-1] = partCPU{"pods", ns / 1e9}
	}
	s[-2] = partCPU{"machine", bench.MachineBusy()}
	return s
}

// since is the CPU seconds by part from before to s, in a fixed order: of the processes
// alive at s (one that ended meanwhile is not counted; one that began counts whole).
func (s cpuShot) since(before cpuShot) string {
	by := map[string]float64{}
	for pid, c := range s {
		by[c.part] += c.cpu - before[pid].cpu
	}
	var b strings.Builder
	for _, p := range []string{"kubelet", "containerd", "shims", "apiserver", "etcd", "kube-sched", "kcm", "pods", "ours", "machine"} {
		if v, ok := by[p]; ok {
			fmt.Fprintf(&b, " %s %.2f", p, v)
		}
	}
	return strings.TrimSpace(b.String())
}
