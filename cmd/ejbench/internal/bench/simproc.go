package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// MesosLocal is one bin/mesos-local started by the harness.
type MesosLocal struct {
	cmd     *exec.Cmd
	URL     string
	logPath string
	exited  chan struct{}
}

var mesosLocalURL = regexp.MustCompile(`(?m)^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// StartMesosLocal starts bin/mesos-local on a free loopback port with its
// work directory under dir and the extra flags, and waits for its URL.
func StartMesosLocal(binDir, dir string, extra ...string) (*MesosLocal, error) {
	work := filepath.Join(dir, "mesos")
	outPath, logPath := filepath.Join(dir, "mesos-local.out"), filepath.Join(dir, "mesos-local.log")
	out, err := os.Create(outPath)
	if err != nil {
		return nil, err
	}
	logw, err := os.Create(logPath)
	if err != nil {
		out.Close()
		return nil, err
	}
	args := append([]string{"--port", "0", "--work-dir", work, "--log-level", LogLevel}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "mesos-local"), args...)
	cmd.Stdout, cmd.Stderr = out, logw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	m := &MesosLocal{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		out.Close()
		logw.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); out.Close(); logw.Close(); close(m.exited) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-m.exited:
			return nil, fmt.Errorf("mesos-local exited during startup; log tail:\n%s", Tail(logPath, 2000))
		default:
		}
		b, _ := os.ReadFile(outPath)
		if sm := mesosLocalURL.FindSubmatch(b); sm != nil {
			m.URL = string(sm[1])
			return m, nil
		}
	}
	m.Stop()
	return nil, fmt.Errorf("mesos-local printed no URL within 30 s; log tail:\n%s", Tail(logPath, 2000))
}

// PID is the mesos-local process's pid.
func (m *MesosLocal) PID() int { return m.cmd.Process.Pid }

// Stop sends SIGTERM and waits (SIGKILL to its process group after 20 s).
func (m *MesosLocal) Stop() {
	if m == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		Logf("mesos-local %d did not stop within 20 s of SIGTERM; killing it", m.PID())
		_ = syscall.Kill(-m.PID(), syscall.SIGKILL)
		<-m.exited
	}
}

// Metrics reads mesos-local's /metrics/snapshot.
func (m *MesosLocal) Metrics() (map[string]float64, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(m.URL + "/metrics/snapshot")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]float64
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("mesos-local /metrics/snapshot: %w", err)
	}
	return out, nil
}
