package soak

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/engine/kube/image"
)

// Kube is the Kubernetes shape: a real single-node Kubernetes (the build
// at Home: its scripts/start.sh, stop.sh and bin.sh; root only; one per
// machine, so run it under the machine's lock), three schedulers with the
// Kubernetes engine on the replicated etcd store (the etcd shape's
// members and peer proxies), each reaching the API server through a
// proxy of its own, and the tasks as pods (host network) of an executor
// image imported into the node's containerd. Each run's script posts its
// start and end to a recorder in the soak's process (httpRecorder), which
// appends them to the run log. The cluster runs without
// kube-controller-manager, as the realkube tier does: no node lifecycle
// and no pod garbage collection, so a lost node is the node object
// deleted while its kubelet is stopped.
type Kube struct {
	Etcd        // the schedulers, their members and peer proxies
	Home string // the Kubernetes build

	rec      *httpRecorder
	run      string   // K8S_RUN
	env      []string // start.sh's and stop.sh's environment
	kubectl  string
	apiAddr  string
	started  bool // start.sh ran (stop.sh is owed)
	imageRef string
}

var _ Shape = (*Kube)(nil)

func (k *Kube) Name() string { return "kube" }

// kubeNS is the namespace of the task pods (start.sh makes its default
// service account without the controller-manager).
const kubeNS = "default"

// AppURL is the recorder app's package, served by the recorder.
func (k *Kube) AppURL() string { return k.rec.url + "/app.tgz" }

// Sizes: what one kubelet on two shared cores runs: crons of 10-30 s,
// one or two shards, pods of 0.1 CPU and 96 MiB (app and job).
func (k *Kube) Sizes() Sizes {
	return Sizes{Periods: []int{10, 12, 15, 20, 30}, MaxShards: 2, CPU: 0.05, MemMB: 32, AppCPU: 0.05, AppMemMB: 64}
}

// Settle: a pod starts seconds after its launch on a busy node.
func (k *Kube) Settle() time.Duration { return 30 * time.Second }

func (k *Kube) Start(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("soak: the kube shape runs a kubelet: run it as root")
	}
	if k.Home == "" {
		return errors.New("soak: the kube shape needs a Kubernetes build (-k8s-home)")
	}
	for _, s := range []string{"start.sh", "stop.sh", "bin.sh"} {
		if _, err := os.Stat(filepath.Join(k.Home, "scripts", s)); err != nil {
			return fmt.Errorf("soak: the Kubernetes build at %s: %w", k.Home, err)
		}
	}
	exe := filepath.Join(k.Bin, "executor")
	if err := static(exe); err != nil {
		return err
	}
	var err error
	if k.rec, err = startHTTPRecorder(k.RunLog); err != nil {
		return err
	}
	if err := k.startCluster(ctx); err != nil {
		return err
	}
	if err := k.importImage(ctx, exe); err != nil {
		return err
	}
	if err := k.warmUp(ctx); err != nil {
		return err
	}
	admin, err := os.ReadFile(filepath.Join(k.run, "admin.kubeconfig"))
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	return k.startMembers(ctx, func(i int, bases []string) (*proxy, []string, error) {
		link, err := newProxy(k.apiAddr)
		if err != nil {
			return nil, nil, err
		}
		cfg := filepath.Join(k.Dir, "s"+strconv.Itoa(i+1)+".kubeconfig")
		b := strings.Replace(string(admin), "https://"+k.apiAddr, "https://"+link.addr(), 1)
		if err := os.WriteFile(cfg, []byte(b), 0o600); err != nil {
			return nil, nil, fmt.Errorf("soak: %w", err)
		}
		return link, []string{"--kube-config", cfg, "--kube-namespace", kubeNS, "--kube-host-network", "true",
			"--kube-image-pull-policy", "Never", "--kube-executor-image", k.imageRef,
			"--kube-scheduler-url", strings.Join(bases, ","), "--offer-refuse-seconds", "1s", "--reconcile-wait", "5s"}, nil
	})
}

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
	etcdPort, err := freePortPair()
	if err != nil {
		return err
	}
	apiPort, err := freePort()
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

// freePortPair is a free port whose next port is free too (etcd's client
// and peer ports).
func freePortPair() (int, error) {
	for range 20 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1)); err == nil {
			ln.Close()
			return p, nil
		}
	}
	return 0, errors.New("soak: no two free ports in a row")
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

func (k *Kube) Faults() []FaultKind {
	var kinds []FaultKind
	for _, f := range k.Etcd.Faults() {
		switch f.Name {
		case "kill-leader", "kill-standby", "pause-leader", "leader-cut-from-peers":
			kinds = append(kinds, f)
		case "leader-cut-from-agents": // sched.mesos is its link to the API server
			f.Name = "leader-cut-from-apiserver"
			kinds = append(kinds, f)
		}
	}
	component := func(name string, sig syscall.Signal) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			if err := k.stopComponent(name, sig); err != nil {
				return nil, "", err
			}
			return k.restartCluster, name, nil
		}
	}
	return append(kinds,
		FaultKind{Name: "apiserver-stopped", MinHold: 3 * time.Second, MaxHold: 15 * time.Second, Inject: component("kube-apiserver", syscall.SIGKILL)},
		FaultKind{Name: "kubelet-restarted", MinHold: time.Second, MaxHold: 5 * time.Second, Inject: component("kubelet", syscall.SIGKILL)},
		FaultKind{Name: "pod-deleted", MinHold: time.Second, MaxHold: 2 * time.Second, Inject: k.deletePod},
		FaultKind{Name: "node-lost", MinHold: 10 * time.Second, MaxHold: 30 * time.Second, Inject: k.loseNode},
	)
}

// deletePod deletes one running task pod (1 s of grace) under its task.
func (k *Kube) deletePod(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
	out, err := k.kubectlDo(ctx, "", "get", "pods", "-n", kubeNS, "-l", "app.kubernetes.io/managed-by=elasticjob",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return nil, "", err
	}
	names := strings.Fields(out)
	if len(names) == 0 {
		return nil, "", errors.New("soak: no task pod running")
	}
	name := names[rng.IntN(len(names))]
	if _, err := k.kubectlDo(ctx, "", "delete", "pod", "-n", kubeNS, name, "--grace-period=1", "--wait=false"); err != nil {
		return nil, "", err
	}
	return func(context.Context) error { return nil }, name, nil
}

// loseNode stops the kubelet and deletes the node object; healing starts
// the kubelet, which registers the node again (start.sh waits for it to
// be Ready and lifts the not-ready taint, the node lifecycle's part).
func (k *Kube) loseNode(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
	if err := k.stopComponent("kubelet", syscall.SIGKILL); err != nil {
		return nil, "", err
	}
	if _, err := k.kubectlDo(ctx, "", "delete", "node", "127.0.0.1", "--wait=false"); err != nil {
		return k.restartCluster, "", err
	}
	return k.restartCluster, "127.0.0.1", nil
}

func (k *Kube) Heal(ctx context.Context) error {
	k.isolate(nil)
	k.lossy(nil, 0)
	for _, s := range k.scheds {
		_ = s.p.signal(syscall.SIGCONT)
		s.mesos.set(false, 0)
	}
	errs := []error{k.restartAll(k.scheds)(ctx)}
	if k.component("kube-apiserver") == 0 || k.component("kubelet") == 0 {
		errs = append(errs, k.restartCluster(ctx))
	}
	return errors.Join(errs...)
}

func (k *Kube) Stop() error {
	errs := []error{k.Etcd.Stop()}
	k.scheds, k.peers = nil, nil // Stop may be called twice
	if k.started {
		k.started = false
		env := k.env
		if os.Getenv("EJ_K8S_KEEP") == "" {
			k.env = append(k.env, "K8S_WIPE=1")
		}
		errs = append(errs, k.script(context.Background(), "stop.sh"))
		k.env = env
		k.killShims()
	}
	if k.rec != nil {
		errs = append(errs, k.rec.close())
		k.rec = nil
	}
	return errors.Join(errs...)
}

// killShims ends the containerd shims of this run's cluster that outlived
// stop.sh (one in some runs, its pid file gone with a task the nemesis
// interrupted): each is found by its -address under the run's state
// directory and killed by its pid.
func (k *Kube) killShims() {
	sock := filepath.Join(k.run, "containerd", "containerd.sock")
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
			k.Log.Warn("soak: a containerd shim outlived stop.sh; killing it", "pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
