package soak

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one process the soak starts: in its own process group, its
// output appended to a log file, restartable with the same arguments.
type proc struct {
	name string
	bin  string
	args []string
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start() error {
	f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("soak: %s log: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("soak: start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return nil
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("soak: %s not started", p.name)
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// kill sends SIGKILL to the group and waits for the process (bounded).
func (p *proc) kill() {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	_ = p.signal(syscall.SIGCONT) // a stopped process group dies on SIGKILL too, but its children may be waiting
	_ = p.signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		p.kill()
	}
}
