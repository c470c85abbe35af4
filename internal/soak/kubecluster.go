package soak

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/engine/kube/image"
	"github.com/ejcloud/elasticjob/internal/loopback"
)

// The kube shape's cluster: the build's scripts, kubectl, the executor
// image, and its processes by their pid files.

// static: the executor runs alone in the image (busybox beside it), so
// it must not need a dynamic loader.
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("soak: the executor: %w", err)
	}
	defer f.Close()
	if f.Section(".interp") != nil {
		return fmt.Errorf("soak: %s is linked dynamically; the kube shape's image needs a static one (CGO_ENABLED=0)", path)
	}
	return nil
}

// startCluster runs start.sh on a state directory of the run's own, with
// ports of its own for the cluster's etcd and API server.
func (k *Kube) startCluster(ctx context.Context) error {
	k.run = filepath.Join(k.Dir, "k8s")
	etcdPort, err := loopback.Pair()
	if err != nil {
		return err
	}
	apiPort, err := loopback.Port()
	if err != nil {
		return err
	}
	k.apiAddr = "127.0.0.1:" + strconv.Itoa(apiPort)
	k.env = append(os.Environ(), "K8S_RUN="+k.run, "K8S_KCM=0", "K8S_SCHED=0",
		"K8S_ETCD_PORT="+strconv.Itoa(etcdPort), "K8S_API_PORT="+strconv.Itoa(apiPort))
	k.started = true
	if err := k.script(ctx, "start.sh"); err != nil {
		return err
	}
	bin, err := exec.CommandContext(ctx, filepath.Join(k.Home, "scripts", "bin.sh")).Output()
	if err != nil {
		return fmt.Errorf("soak: bin.sh: %w", err)
	}
	k.kubectl = filepath.Join(strings.TrimSpace(string(bin)), "kubectl")
	return nil
}

// script runs one of the build's scripts (bounded).
func (k *Kube) script(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(k.Home, "scripts", name))
	cmd.Env = k.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("soak: %s: %w: %s", name, err, tail(out, 2000))
	}
	return nil
}

// kubectlDo runs kubectl with the admin's kubeconfig.
func (k *Kube) kubectlDo(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(k.run, "admin.kubeconfig"))
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("soak: kubectl %s: %w: %s", strings.Join(args, " "), err, tail(out, 500))
	}
	return string(out), nil
}

// importImage packs the executor image (the executor and busybox) and
// imports it into the node's containerd.
func (k *Kube) importImage(ctx context.Context, exe string) error {
	k.imageRef = "localhost/elasticjob-executor:soak"
	list, err := exec.CommandContext(ctx, "/bin/busybox", "--list").Output()
	if err != nil {
		return fmt.Errorf("soak: /bin/busybox --list: %w (a static busybox: apt-get install busybox-static)", err)
	}
	tarball := filepath.Join(k.Dir, "executor-image.tar")
	f, err := os.Create(tarball)
	if err != nil {
		return err
	}
	err = image.Write(f, image.Spec{Ref: k.imageRef, Executor: exe, Busybox: "/bin/busybox", Applets: strings.Fields(string(list))})
	if err := errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("soak: the executor image: %w", err)
	}
	bin, err := exec.CommandContext(ctx, filepath.Join(k.Home, "scripts", "bin.sh")).Output()
	if err != nil {
		return fmt.Errorf("soak: bin.sh: %w", err)
	}
	ctr := filepath.Join(strings.TrimSpace(string(bin)), "ctr")
	out, err := exec.CommandContext(ctx, ctr, "-a", filepath.Join(k.run, "containerd", "containerd.sock"), "-n", "k8s.io",
		"images", "import", "--local", tarball).CombinedOutput()
	if err != nil {
		return fmt.Errorf("soak: import the executor image: %w: %s", err, out)
	}
	return nil
}

// warmUp runs one pod to its end: the kubelet's first pods after its
// start can be lost in its start-up.
func (k *Kube) warmUp(ctx context.Context) error {
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"soak-warm-up","namespace":"` + kubeNS + `"},
"spec":{"nodeName":"127.0.0.1","restartPolicy":"Never","hostNetwork":true,
"containers":[{"name":"c","image":"` + k.imageRef + `","imagePullPolicy":"Never","command":["/bin/true"]}]}}`
	for try := 0; ; try++ {
		if _, err := k.kubectlDo(ctx, pod, "apply", "-f", "-"); err != nil {
			return err
		}
		_, err := k.kubectlDo(ctx, "", "wait", "-n", kubeNS, "--for=jsonpath={.status.phase}=Succeeded", "pod/soak-warm-up", "--timeout=60s")
		_, _ = k.kubectlDo(ctx, "", "delete", "-n", kubeNS, "pod/soak-warm-up", "--grace-period=0", "--force", "--wait=true")
		if err == nil || try == 2 {
			return err
		}
	}
}

// component is the pid of one of the cluster's processes (0: not running).
func (k *Kube) component(name string) int {
	b, err := os.ReadFile(filepath.Join(k.run, "pids", name+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0
	}
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if f := strings.Fields(string(st)); err != nil || len(f) < 3 || f[2] == "Z" { // a zombie is gone
		return 0
	}
	return pid
}

// stopComponent ends a cluster process (sig, then SIGKILL after 10 s) and
// waits for it to be gone.
func (k *Kube) stopComponent(name string, sig syscall.Signal) error {
	pid := k.component(name)
	if pid == 0 {
		return fmt.Errorf("soak: %s is not running", name)
	}
	_ = syscall.Kill(pid, sig)
	for i := 0; k.component(name) != 0; i++ {
		if i == 100 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if i > 200 {
			return fmt.Errorf("soak: %s did not end", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// restartCluster starts what of the cluster is not running (start.sh
// skips what runs and waits for the node to be Ready).
func (k *Kube) restartCluster(ctx context.Context) error { return k.script(ctx, "start.sh") }

// killShims ends the containerd shims of this run's cluster that outlived
// stop.sh (one in some runs, its pid file gone with a task the nemesis
// interrupted): each is found by its -address under the run's state
// directory and killed by its pid.
func (k *Kube) killShims() {
	for _, pid := range k.shims() {
		k.Log.Warn("soak: a containerd shim outlived stop.sh; killing it", "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// shims are the pids of this run's containerd shims: each is found by its
// -address under the run's state directory.
func (k *Kube) shims() []int {
	sock := filepath.Join(k.run, "containerd", "containerd.sock")
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Contains(args, sock) {
			out = append(out, pid)
		}
	}
	return out
}

// killContainers kills every container of the node, as a machine that
// crashed loses them: the processes whose parent is one of this run's
// shims (each container's first process and each pod's pause; a
// container's other processes die with its first, the init of its pid
// namespace), by SIGKILL, and waits until they are gone. It returns how
// many it killed. containerd and the shims go on: the kubelet that comes
// back finds the containers exited, as one on a rebooted machine finds
// them gone.
func (k *Kube) killContainers() (int, error) {
	shims := k.shims()
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(pid); ok && slices.Contains(shims, pp) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for i := 0; ; i++ {
		left := 0
		for _, pid := range pids {
			if pp, ok := parentOf(pid); ok && slices.Contains(shims, pp) {
				left++
			}
		}
		if left == 0 {
			return len(pids), nil
		}
		if i == 100 {
			return len(pids), fmt.Errorf("soak: %d of the node's %d containers did not end within 10 s of SIGKILL", left, len(pids))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parentOf is a live (not zombie) process's parent pid.
func parentOf(pid int) (int, bool) {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses
	i := strings.LastIndexByte(string(st), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 2 || f[0] == "Z" {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
