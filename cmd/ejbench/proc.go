package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clkTck is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is 100
// on every Linux architecture Go supports; getconf confirms it when present.
var clkTck = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return float64(v)
		}
	}
	return 100
}()

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// schedProc is one scheduler process started by the harness.
type schedProc struct {
	cmd     *exec.Cmd
	dataDir string
	port    int
	logPath string
	started time.Time
	exited  chan struct{}
	api     *client
	// stopTook is how long the last stop took (SIGTERM to exit).
	stopTook time.Duration
}

// logLevel is the --log-level of the processes the harness starts.
var logLevel = "warn"

// startScheduler starts bin/scheduler on a fresh free port with its own
// data directory (created by the caller) and the extra flags.
func startScheduler(binDir, dataDir string, extra ...string) (*schedProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dataDir, fmt.Sprintf("scheduler-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--data-dir", dataDir, "--http-port", strconv.Itoa(port), "--log-level", logLevel}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "scheduler"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &schedProc{cmd: cmd, dataDir: dataDir, port: port, logPath: logPath, exited: make(chan struct{})}
	p.api = newClient(fmt.Sprintf("http://127.0.0.1:%d", port), 64)
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.exited) }()
	return p, nil
}

func (p *schedProc) pid() int { return p.cmd.Process.Pid }

// waitHealthy polls /healthz every 5 ms and returns the time since start.
func (p *schedProc) waitHealthy(timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return 0, fmt.Errorf("scheduler exited during startup; log tail:\n%s", tail(p.logPath, 2000))
		default:
		}
		if p.api.healthy() {
			return time.Since(p.started), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("scheduler not healthy after %v; log tail:\n%s", timeout, tail(p.logPath, 2000))
}

// stop sends SIGTERM to the scheduler and waits (SIGKILL to its process
// group after 20 s). The executors its embedded agent started outlive it
// (a restart takes them over); killOwnExecutors ends them.
func (p *schedProc) stop() {
	if p == nil {
		return
	}
	t := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		logf("scheduler %d did not stop within 20 s of SIGTERM; killing its process group", p.pid())
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.exited
	}
	p.stopTook = time.Since(t)
	logf("scheduler %d stopped in %s", p.pid(), p.stopTook.Round(time.Millisecond))
	p.api.close()
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// procStat is a process's CPU time and memory from /proc.
type procStat struct {
	cpu   float64 // utime+stime in seconds
	child float64 // cutime+cstime in seconds: children waited for
	mem
	taken time.Time
}

func readProc(pid int) (procStat, error) {
	st := procStat{taken: time.Now()}
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
	st.cpu = (ut + stt) / clkTck
	cut, _ := strconv.ParseFloat(f[13], 64)
	cst, _ := strconv.ParseFloat(f[14], 64)
	st.child = (cut + cst) / clkTck
	st.mem, err = readMem(pid)
	return st, err
}

// mem is a process's memory from /proc/PID/status, in bytes.
type mem struct {
	rss, hwm int64 // VmRSS, VmHWM
	file     int64 // RssFile: the pages of mapped files (the binary, libraries, any mmap) in VmRSS
}

// readMem returns VmRSS, VmHWM and RssFile in bytes.
func readMem(pid int) (mem, error) {
	var m mem
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
		}{{"VmRSS:", &m.rss}, {"VmHWM:", &m.hwm}, {"RssFile:", &m.file}} {
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

// executorsOf lists the executor processes whose parent is the scheduler
// (the embedded agent starts them): this leaves out an executor's own
// children caught between fork and exec, which still show its binary.
func executorsOf(executorPath, dataDir string, schedPID int) []int {
	var out []int
	for _, pid := range ownExecutors(executorPath, dataDir) {
		if ppidOf(pid) == schedPID {
			out = append(out, pid)
		}
	}
	return out
}

// killOwnExecutors ends executors of dataDir left behind (by pid).
func killOwnExecutors(executorPath, dataDir string) int {
	pids := ownExecutors(executorPath, dataDir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// waitNoExecutors waits until no executor of dataDir runs.
func waitNoExecutors(ctx context.Context, executorPath, dataDir string, schedPID int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if len(executorsOf(executorPath, dataDir, schedPID)) == 0 {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// treeCPU returns, for each pid, its CPU plus that of the children it
// waited for (an executor and the job processes it reaped), in seconds.
func treeCPU(pids []int) map[int]float64 {
	out := make(map[int]float64, len(pids))
	for _, pid := range pids {
		if st, err := readProc(pid); err == nil {
			out[pid] = st.cpu + st.child
		}
	}
	return out
}

// cpuDelta sums the growth of treeCPU between two samples over the pids
// present in both.
func cpuDelta(a, b map[int]float64) float64 {
	var d float64
	for pid, v := range b {
		if u, ok := a[pid]; ok && v >= u {
			d += v - u
		}
	}
	return d
}

// machineBusy returns the machine's busy CPU time (all CPUs, every state
// but idle and iowait) in seconds, from /proc/stat.
func machineBusy() float64 {
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
	return busy / clkTck
}
