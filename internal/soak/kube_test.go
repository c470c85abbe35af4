package soak

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKubeShapeFaults: the kube shape offers the etcd shape's scheduler
// and peer faults (the cut from mesos-local becoming the cut from the API
// server) and the cluster's own, none of the simulated agents'.
func TestKubeShapeFaults(t *testing.T) {
	s, err := NewShape(Config{Shape: "kube", Dir: t.TempDir(), K8sHome: "/nowhere"}, "runs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Faults() {
		names = append(names, f.Name)
		if f.MinHold <= 0 || f.MaxHold < f.MinHold || f.Inject == nil {
			t.Errorf("%s: holds %s-%s, inject %v", f.Name, f.MinHold, f.MaxHold, f.Inject != nil)
		}
	}
	want := []string{"apiserver-stopped", "kill-leader", "kill-standby", "kubelet-restarted", "leader-cut-from-apiserver",
		"leader-cut-from-peers", "node-lost", "pause-leader", "pod-deleted"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("faults %v, want %v", names, want)
	}
	if _, ok := s.(realRuns); !ok {
		t.Error("the kube shape does not serve its runs' app")
	}
}

// TestKubeShapeRefusesWhatCannotRun: a missing build or a dynamically
// linked executor is said plainly before anything starts.
func TestKubeShapeRefusesWhatCannotRun(t *testing.T) {
	if err := static("/bin/sh"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic binary: %v", err)
	}
	k := &Kube{Etcd: Etcd{ZK: ZK{Bin: t.TempDir(), Dir: t.TempDir()}}, Home: t.TempDir()}
	want := "start.sh"
	if os.Geteuid() != 0 {
		want = "as root"
	}
	if err := k.Start(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a build without scripts: %v, want %q", err, want)
	}
}

// TestKillShimsEndsTheRunsOwn: a process named like a containerd shim whose
// -address is this run's containerd socket is killed; one of another
// run's is left alone. The fake shims are this test binary (a symlink of
// the shim's name) running TestFakeShim.
func TestKillShimsEndsTheRunsOwn(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "containerd-shim-runc-v2")
	if err := os.Symlink(self, shim); err != nil {
		t.Fatal(err)
	}
	k := &Kube{Etcd: Etcd{ZK: ZK{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}, run: filepath.Join(dir, "k8s")}
	start := func(sock string) *exec.Cmd {
		cmd := exec.Command(shim, "-test.run=^TestFakeShim$", "--", "-address", sock)
		cmd.Env = append(os.Environ(), "SOAK_FAKE_SHIM=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // each is waited for below
		return cmd
	}
	ours := start(filepath.Join(dir, "k8s", "containerd", "containerd.sock"))
	theirs := start(filepath.Join(dir, "other", "containerd", "containerd.sock"))
	done := make(chan error, 1)
	go func() { done <- theirs.Wait() }()
	k.killShims()
	oursDone := make(chan error, 1)
	go func() { oursDone <- ours.Wait() }()
	select {
	case err = <-oursDone:
	case <-time.After(time.Minute): // a bound on a hang, not on how long the kill takes
		t.Fatal("our shim was not killed")
	}
	if ws, ok := ours.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("our shim ended with %v, want killed by SIGKILL", err)
	}
	select {
	case err := <-done:
		t.Errorf("another run's shim ended: %v", err)
	default:
		_ = theirs.Process.Kill()
		<-done
	}
}

// TestKillContainersKillsTheShimsChildren: a node's crash kills the
// processes whose parent is one of this run's shims (its containers), and
// neither the shims nor another run's containers.
func TestKillContainersKillsTheShimsChildren(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "containerd-shim-runc-v2")
	if err := os.Symlink(self, shim); err != nil {
		t.Fatal(err)
	}
	k := &Kube{Etcd: Etcd{ZK: ZK{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}, run: filepath.Join(dir, "k8s")}
	start := func(sock string) *exec.Cmd {
		cmd := exec.Command(shim, "-test.run=^TestFakeShim$", "--", "-address", sock)
		cmd.Env = append(os.Environ(), "SOAK_FAKE_SHIM=1", "SOAK_FAKE_SHIM_CHILD=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	ours := start(filepath.Join(dir, "k8s", "containerd", "containerd.sock"))
	theirs := start(filepath.Join(dir, "other", "containerd", "containerd.sock"))
	childOf := func(p int) int {
		for i := 0; i < 600; i++ { // a bound on a hang: the shim starts its child
			dirs, _ := os.ReadDir("/proc")
			for _, d := range dirs {
				pid, err := strconv.Atoi(d.Name())
				if err != nil {
					continue
				}
				if pp, ok := parentOf(pid); ok && pp == p {
					return pid
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the fake shim %d started no child", p)
		return 0
	}
	ourChild, theirChild := childOf(ours.Process.Pid), childOf(theirs.Process.Pid)
	t.Cleanup(func() { _ = syscall.Kill(theirChild, syscall.SIGKILL) })
	n, err := k.killContainers()
	if err != nil || n != 1 {
		t.Fatalf("killContainers: %d, %v; want 1 killed", n, err)
	}
	if _, ok := parentOf(ourChild); ok {
		t.Error("our shim's child lives on")
	}
	if pp, ok := parentOf(theirChild); !ok || pp != theirs.Process.Pid {
		t.Error("another run's container was killed")
	}
	for _, c := range []*exec.Cmd{ours, theirs} {
		if _, ok := parentOf(c.Process.Pid); !ok {
			t.Errorf("shim %d was killed", c.Process.Pid)
		}
	}
}

// TestFakeShim is the fake shim of TestKillShimsEndsTheRunsOwn and
// TestKillContainersKillsTheShimsChildren: it starts a child (its
// container) when asked and waits to be killed (bounded).
func TestFakeShim(t *testing.T) {
	if os.Getenv("SOAK_FAKE_SHIM") == "" {
		t.Skip("a helper process of TestKillShimsEndsTheRunsOwn")
	}
	if os.Getenv("SOAK_FAKE_SHIM_CHILD") != "" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = child.Wait() }() // reaped as a shim reaps its containers
	}
	time.Sleep(5 * time.Minute)
}
