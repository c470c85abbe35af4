package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// processesOf lists the live processes of a task on this host: those whose environment
// names it (ELASTICJOB_TASK_ID, which the executor gives the job's process and its
// children, and a Kubernetes pod's executor). Every engine of the tiers runs its tasks on
// this machine, a pod's containers too, so "nothing of the task runs on" is read the same
// way for all of them.
func processesOf(taskID string) []int {
	want := []byte("ELASTICJOB_TASK_ID=" + taskID)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !zombieFree(d) {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// zombieFree reports whether the process of /proc/PID dir d has not exited.
func zombieFree(d string) bool {
	b, err := os.ReadFile(filepath.Join(d, "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
