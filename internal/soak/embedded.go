package soak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// Embedded is the embedded shape: one scheduler with its embedded store
// and history (SQLite in its data directory), launching on mesos-local's
// simulated agents (which append every run to the run log). Its faults:
// kill -9 and restart, SIGSTOP and SIGCONT, mesos-local killed, and, as
// root, a full disk under the data directory (a tmpfs the run mounts and
// unmounts).
type Embedded struct {
	Bin    string
	Dir    string
	RunLog string
	Seed   uint64
	Log    *slog.Logger
	// DiskMB sizes the tmpfs under the data directory (root only; 0:
	// DefaultDiskMB).
	DiskMB int

	mesos    *proc
	mesosURL string
	s        *sched
	data     string
	mounted  bool
}

var _ Shape = (*Embedded)(nil)

// DefaultDiskMB is the embedded shape's tmpfs: room for 10 minutes of 200 jobs with history, so
// that the disk is full only under the disk-full fault.
const DefaultDiskMB = 1024

func (e *Embedded) Name() string { return "embedded" }

func (e *Embedded) Start(ctx context.Context) error {
	e.data = filepath.Join(e.Dir, "data")
	if err := os.MkdirAll(e.data, 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		size := e.DiskMB
		if size == 0 {
			size = DefaultDiskMB
		}
		out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size)+"m", "ejsoak", e.data).CombinedOutput()
		if err != nil {
			e.Log.Warn("soak: no tmpfs under the data directory; the full-disk fault is left out", "err", err, "out", string(out))
		} else {
			e.mounted = true
		}
	}
	var err error
	if e.mesos, e.mesosURL, err = startSimMesos(ctx, e.Bin, e.Dir, e.RunLog, "", e.Seed); err != nil {
		return err
	}
	port, err := loopback.Port()
	if err != nil {
		return err
	}
	e.s = &sched{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	e.s.p = &proc{name: "scheduler", bin: filepath.Join(e.Bin, "scheduler"), log: filepath.Join(e.Dir, "scheduler.log"),
		args: []string{"--data-dir", e.data, "--http-port", strconv.Itoa(port), "--mesos-url", e.mesosURL,
			"--allow-file-app-urls", "true", "--time-zone", "UTC", "--log-level", "info"}}
	if err := e.s.p.start(); err != nil {
		return err
	}
	return (&ZK{}).await(ctx, e.s)
}

func (e *Embedded) APIs() []string { return []string{e.s.base} }

func (e *Embedded) restart(ctx context.Context) error {
	if err := e.s.p.start(); err != nil {
		return err
	}
	return (&ZK{}).await(ctx, e.s)
}

func (e *Embedded) Faults() []FaultKind {
	kinds := []FaultKind{
		{Name: "kill-scheduler", MinHold: time.Second, MaxHold: 4 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			e.s.p.kill()
			return e.restart, "scheduler", nil
		}},
		{Name: "pause-scheduler", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			if err := e.s.p.signal(syscall.SIGSTOP); err != nil {
				return nil, "", err
			}
			return func(context.Context) error { return e.s.p.signal(syscall.SIGCONT) }, "scheduler", nil
		}},
		{Name: "agents-killed", MinHold: time.Second, MaxHold: 3 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			e.mesos.kill()
			return func(context.Context) error { return e.mesos.start() }, "mesos-local", nil
		}},
	}
	if e.mounted {
		kinds = append(kinds, FaultKind{Name: "disk-full", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: e.fillDisk})
	}
	return kinds
}

// fillDisk writes a file until the tmpfs is full; healing removes it.
func (e *Embedded) fillDisk(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
	path := filepath.Join(e.data, "ejsoak-fill")
	f, err := os.Create(path)
	if err != nil {
		return nil, "", err
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				os.Remove(path)
				return nil, "", err
			}
			break
		}
	}
	f.Close()
	return func(context.Context) error { return os.Remove(path) }, fmt.Sprintf("%d MiB", n>>20), nil
}

func (e *Embedded) Heal(ctx context.Context) error {
	_ = os.Remove(filepath.Join(e.data, "ejsoak-fill"))
	_ = e.s.p.signal(syscall.SIGCONT)
	if !e.mesos.running() {
		if err := e.mesos.start(); err != nil {
			return err
		}
	}
	if !e.s.p.running() {
		return e.restart(ctx)
	}
	return nil
}

func (e *Embedded) Stop() error {
	if e.s != nil {
		e.s.p.stop(10 * time.Second)
	}
	if e.mesos != nil {
		e.mesos.stop(10 * time.Second)
	}
	if e.mounted {
		if out, err := exec.Command("umount", e.data).CombinedOutput(); err != nil {
			return fmt.Errorf("soak: umount %s: %w: %s", e.data, err, out)
		}
		e.mounted = false
	}
	return nil
}
