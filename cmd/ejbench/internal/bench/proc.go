package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// ClkTck is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is 100
// on every Linux architecture Go supports; getconf confirms it when present.
var ClkTck = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return float64(v)
		}
	}
	return 100
}()

// FreePort is an unused loopback port, outside the range the kernel gives
// the harness's many client connections (internal/loopback).
func FreePort() (int, error) { return loopback.Port() }

// Scheduler is one scheduler process started by the harness.
type Scheduler struct {
	Cmd     *exec.Cmd
	DataDir string
	Port    int
	LogPath string
	Started time.Time
	Exited  chan struct{}
	API     *Client
	// stopTook is how long the last stop took (SIGTERM to exit).
	StopTook time.Duration
}

// LogLevel is the --log-level of the processes the harness starts.
var LogLevel = "warn"

// StartScheduler starts bin/scheduler on a fresh free port with its own
// data directory (created by the caller) and the extra flags.
func StartScheduler(binDir, dataDir string, extra ...string) (*Scheduler, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dataDir, fmt.Sprintf("scheduler-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"--data-dir", dataDir, "--http-port", strconv.Itoa(port), "--log-level", LogLevel}
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--tenant-isolation") }) {
		// The jobs' apps and the stamps they write are under the harness's
		// temporary directories, which tenant isolation hides behind a
		// private /tmp: tasks run as the scheduler's user, as in the e2e tests.
		args = append(args, "--tenant-isolation", "off")
	}
	args = append(args, extra...)
	cmd := exec.Command(filepath.Join(binDir, "scheduler"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Scheduler{Cmd: cmd, DataDir: dataDir, Port: port, LogPath: logPath, Exited: make(chan struct{})}
	p.API = NewClient(fmt.Sprintf("http://127.0.0.1:%d", port), 64)
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.Exited) }()
	return p, nil
}

// PID is the scheduler process's pid.
func (p *Scheduler) PID() int { return p.Cmd.Process.Pid }

// WaitHealthy polls /healthz every 5 ms and returns the time since start.
func (p *Scheduler) WaitHealthy(timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.Exited:
			return 0, fmt.Errorf("scheduler exited during startup; log tail:\n%s", Tail(p.LogPath, 2000))
		default:
		}
		if p.API.Healthy() {
			return time.Since(p.Started), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("scheduler not healthy after %v; log tail:\n%s", timeout, Tail(p.LogPath, 2000))
}

// Stop sends SIGTERM to the scheduler and waits (SIGKILL to its process
// group after 20 s). The executors its embedded agent started outlive it
// (a restart takes them over); killOwnExecutors ends them.
func (p *Scheduler) Stop() {
	if p == nil {
		return
	}
	t := time.Now()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(20 * time.Second):
		Logf("scheduler %d did not stop within 20 s of SIGTERM; killing its process group", p.PID())
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.Exited
	}
	p.StopTook = time.Since(t)
	Logf("scheduler %d stopped in %s", p.PID(), p.StopTook.Round(time.Millisecond))
	p.API.Close()
}

// Tail is the last n bytes of the file at path (a log), or why it cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// ProcStat is a process's CPU time and memory from /proc.
type ProcStat struct {
	CPU   float64 // utime+stime in seconds
	child float64 // cutime+cstime in seconds: children waited for
	Mem
	Taken time.Time
}

// ReadProc reads pid's CPU times and memory from /proc.
func ReadProc(pid int) (ProcStat, error) {
	st := ProcStat{Taken: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return st, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 15 {
		return st, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	st.CPU = (ut + stt) / ClkTck
	cut, _ := strconv.ParseFloat(f[13], 64)
	cst, _ := strconv.ParseFloat(f[14], 64)
	st.child = (cut + cst) / ClkTck
	st.Mem, err = ReadMem(pid)
	return st, err
}

// Mem is a process's memory from /proc/PID/status, in bytes.
type Mem struct {
	RSS, HWM int64 // VmRSS, VmHWM
	File     int64 // RssFile: the pages of mapped files (the binary, libraries, any mmap) in VmRSS
}

// ReadMem returns VmRSS, VmHWM and RssFile in bytes.
func ReadMem(pid int) (Mem, error) {
	var m Mem
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			prefix string
			dst    *int64
		}{{"VmRSS:", &m.RSS}, {"VmHWM:", &m.HWM}, {"RssFile:", &m.File}} {
			if strings.HasPrefix(line, k.prefix) {
				fs := strings.Fields(line[len(k.prefix):])
				if len(fs) > 0 {
					v, _ := strconv.ParseInt(fs[0], 10, 64)
					*k.dst = v * 1024
				}
			}
		}
	}
	return m, sc.Err()
}

// ownExecutors lists the pids of executor processes started for a data
// directory: their binary is binDir/executor and their working directory
// or environment lies under dataDir (so executors of other schedulers on
// this machine are never counted or touched).
func ownExecutors(executorPath, dataDir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != executorPath {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && strings.HasPrefix(cwd, dataDir) {
			pids = append(pids, pid)
			continue
		}
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && strings.Contains(string(env), dataDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ppidOf reads a process's parent pid (0 if unknown).
func ppidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.Atoi(f[1])
	return v
}

// ExecutorsOf lists the executor processes whose parent is the scheduler
// (the embedded agent starts them): this leaves out an executor's own
// children caught between fork and exec, which still show its binary.
func ExecutorsOf(executorPath, dataDir string, schedPID int) []int {
	var out []int
	for _, pid := range ownExecutors(executorPath, dataDir) {
		if ppidOf(pid) == schedPID {
			out = append(out, pid)
		}
	}
	return out
}

// KillOwnExecutors ends executors of dataDir left behind (by pid).
func KillOwnExecutors(executorPath, dataDir string) int {
	pids := ownExecutors(executorPath, dataDir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// WaitNoExecutors waits until no executor of dataDir runs.
func WaitNoExecutors(ctx context.Context, executorPath, dataDir string, schedPID int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if len(ExecutorsOf(executorPath, dataDir, schedPID)) == 0 {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// TreeCPU returns, for each pid, its CPU plus that of the children it
// waited for (an executor and the job processes it reaped), in seconds.
func TreeCPU(pids []int) map[int]float64 {
	out := make(map[int]float64, len(pids))
	for _, pid := range pids {
		if st, err := ReadProc(pid); err == nil {
			out[pid] = st.CPU + st.child
		}
	}
	return out
}

// CPUDelta sums the growth of treeCPU between two samples over the pids
// present in both.
func CPUDelta(a, b map[int]float64) float64 {
	var d float64
	for pid, v := range b {
		if u, ok := a[pid]; ok && v >= u {
			d += v - u
		}
	}
	return d
}

// MachineBusy returns the machine's busy CPU time (all CPUs, every state
// but idle and iowait) in seconds, from /proc/stat.
func MachineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		busy += x
	}
	return busy / ClkTck
}

// RunDelay returns how long pid's threads have waited on a runqueue, summed, in
// seconds (the second field of /proc/PID/task/*/schedstat): time they could run
// but did not, for other processes or for their cgroup's quota. Threads that have
// ended are not counted.
func RunDelay(pid int) float64 {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns float64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fs := strings.Fields(string(b)); len(fs) >= 2 {
			v, _ := strconv.ParseFloat(fs[1], 64)
			ns += v
		}
	}
	return ns / 1e9
}
