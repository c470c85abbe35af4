//go:build e2e

package e2e

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What tenant isolation costs a task, measured rather than asserted
// (docs/benchmarks.md): two schedulers, one with tenant isolation on and
// one off, each with executor_idle_timeout=0s so that every task starts
// an executor of its own (isolation's cost is at the executor's start;
// tasks an executor runs later pay nothing). Triggers alternate between
// the two, one at a time. For each task: trigger → the task's process
// start (its first `date +%s%N`), and the CPU of the executor and its
// task (the scheduler's reaped children, cutime + cstime). Set
// EJ_BENCH_TENANCY=N (rounds) to run it, as root;
// EJ_BENCH_TENANCY_IDLE=10s keeps executors between tasks instead (then
// only the first task of each scheduler starts one).
func TestTenantIsolationCost(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("EJ_BENCH_TENANCY"))
	if rounds <= 0 || os.Geteuid() != 0 {
		t.Skip("set EJ_BENCH_TENANCY=rounds and run as root")
	}
	if err := os.Chmod(filepath.Dir(filepath.Dir(schedulerBin)), 0o711); err != nil {
		t.Fatal(err)
	}
	type side struct {
		s    *scheduler
		data string
		lat  []time.Duration
		seen map[string]bool
		cpu0 [2]int64 // children's, own ticks
	}
	idle := os.Getenv("EJ_BENCH_TENANCY_IDLE")
	if idle == "" {
		idle = "0s"
	}
	sides := map[string]*side{}
	for _, mode := range []string{"off", "on"} {
		data := filepath.Join(t.TempDir(), "data")
		s := startScheduler(t, schedOpts{dataDir: data, extra: []string{"--tenant-isolation", mode, "--executor-idle-timeout", idle}})
		s.must(http.MethodPost, "/api/app", map[string]any{"appName": "rec", "appURL": appServer.URL + servedPath,
			"bootstrapScript": "bin/record.sh", "cpuCount": 0.1, "memoryMB": 32})
		s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "stamp", "appName": "rec",
			"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 16, "jobType": "SCRIPT",
			"props": map[string]string{"script.command.line": "sh -c 'date +%s%N'"}})
		sides[mode] = &side{s: s, data: data, seen: map[string]bool{}}
	}
	// A first run of each fills the app cache: not measured.
	for _, mode := range []string{"off", "on"} {
		sd := sides[mode]
		sd.s.trigger("stamp")
		eventually(t, waitLong, func() bool { return len(newStamps(sd.data, sd.seen)) > 0 }, "the %s scheduler's first run", mode)
		if idle == "0s" {
			awaitNoChildren(t, sd.s.Pid())
		}
		sd.cpu0 = procCPU(t, sd.s.Pid())
	}
	for range rounds {
		for _, mode := range []string{"on", "off"} {
			sd := sides[mode]
			at := time.Now()
			sd.s.trigger("stamp")
			var got []int64
			eventually(t, waitLong, func() bool { got = newStamps(sd.data, sd.seen); return len(got) > 0 }, "a %s run", mode)
			sd.lat = append(sd.lat, time.Unix(0, got[0]).Sub(at))
			if idle == "0s" {
				awaitNoChildren(t, sd.s.Pid()) // its executor ended and was reaped: its CPU is counted
			}
		}
	}
	for _, sd := range sides {
		awaitNoChildren(t, sd.s.Pid())
	}
	for _, mode := range []string{"off", "on"} {
		sd := sides[mode]
		cpu := procCPU(t, sd.s.Pid())
		tick := float64(time.Second/100) / float64(time.Millisecond)
		slices.Sort(sd.lat)
		t.Logf("isolation %s: %d tasks, trigger → process start p50 %v p90 %v; CPU per task: executor and task %.1f ms, scheduler %.1f ms",
			mode, len(sd.lat), sd.lat[len(sd.lat)/2].Round(100*time.Microsecond), sd.lat[len(sd.lat)*9/10].Round(100*time.Microsecond),
			float64(cpu[0]-sd.cpu0[0])*tick/float64(rounds), float64(cpu[1]-sd.cpu0[1])*tick/float64(rounds))
	}
}

// newStamps are the start times (ns) in task stdout files not seen before.
func newStamps(data string, seen map[string]bool) []int64 {
	var out []int64
	_ = filepath.WalkDir(filepath.Join(data, "mesos"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stdout" || !strings.Contains(p, "/tasks/") || seen[p] {
			return nil
		}
		b, _ := os.ReadFile(p)
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			seen[p] = true
			out = append(out, v)
		}
		return nil
	})
	return out
}

// awaitNoChildren waits until pid has no child process left.
func awaitNoChildren(t *testing.T, pid int) {
	eventually(t, waitLong, func() bool {
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
			if err != nil {
				continue
			}
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				return false
			}
		}
		return true
	}, "process %d's children to end", pid)
}

// procCPU is a process's reaped children's CPU (cutime + cstime) and its
// own (utime + stime), in clock ticks.
func procCPU(t *testing.T, pid int) [2]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return [2]int64{n(13) + n(14), n(11) + n(12)} // fields 16, 17 and 14, 15 of stat(5)
}
