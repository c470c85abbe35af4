package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/engine/kube"
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

// kubeNode is the real Kubernetes' one node (start.sh's NODE).
const kubeNode = "127.0.0.1"

// loseNode stops the kubelet and deletes the node object; healing starts
// the kubelet, which registers the node again (start.sh waits for it to
// be Ready and lifts the not-ready taint, the node lifecycle's part).
// The containers run on, their executors still report.
func (k *Kube) loseNode(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
	return k.downNode(ctx, nil)
}

// downNode is loseNode; with lose set, the node goes as a machine that
// crashed: its containers are killed too once the kubelet is gone (so it
// reports no end of theirs), and lose is given the tasks of the node's
// pods that had not ended then (their phases as the dead kubelet left
// them) to record their runs lost. Once the kubelet is killed the fault
// has happened: a later step's failure is told in its detail rather than
// returned, which would hide the fault from the checker (the nemesis
// records and heals no fault that failed to inject). Without lose, a
// failure to delete the node starts the kubelet again and is returned.
func (k *Kube) downNode(ctx context.Context, lose func([]string) error) (func(context.Context) error, string, error) {
	if err := k.stopComponent("kubelet", syscall.SIGKILL); err != nil {
		return nil, "", err
	}
	detail := kubeNode
	if lose != nil {
		n, killErr := k.killContainers()
		detail += ", " + strconv.Itoa(n) + " containers killed"
		errs := []error{killErr}
		tasks, err := k.podTasks(ctx)
		if err == nil {
			err = lose(tasks)
		}
		errs = append(errs, err)
		if _, err := k.kubectlDo(ctx, "", "delete", "node", kubeNode, "--wait=false"); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			detail += "; " + err.Error()
		}
		return k.restartCluster, detail, nil
	}
	if _, err := k.kubectlDo(ctx, "", "delete", "node", kubeNode, "--wait=false"); err != nil {
		return nil, "", errors.Join(err, k.restartCluster(ctx))
	}
	return k.restartCluster, detail, nil
}

// podTasks are the tasks of the task pods bound to the node and not ended
// (Pending, Running, Unknown), in every namespace.
func (k *Kube) podTasks(ctx context.Context) ([]string, error) {
	out, err := k.kubectlDo(ctx, "", "get", "pods", "--all-namespaces", "-l", kube.LabelManagedBy+"="+kube.ManagedBy,
		"--field-selector=spec.nodeName="+kubeNode+",status.phase!=Succeeded,status.phase!=Failed", "-o", "json")
	if err != nil {
		return nil, err
	}
	var l corev1.PodList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("soak: the node's pods: %w", err)
	}
	var tasks []string
	for _, p := range l.Items {
		if t := p.Annotations[kube.AnnotationTask]; t != "" {
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
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
	k.warnPressure(ctx)
	return errors.Join(errs...)
}

func (k *Kube) Stop() error {
	errs := []error{k.Etcd.Stop()}
	k.scheds, k.peers = nil, nil // Stop may be called twice
	errs = append(errs, k.stopCluster())
	if k.rec != nil {
		errs = append(errs, k.rec.close())
		k.rec = nil
	}
	return errors.Join(errs...)
}

// stopCluster runs stop.sh once start.sh ran (also when it failed: it
// ends what it started and puts the kernel's settings back).
func (k *Kube) stopCluster() error {
	if !k.started {
		return nil
	}
	k.started = false
	env := k.env
	if os.Getenv("EJ_K8S_KEEP") == "" {
		k.env = append(k.env, "K8S_WIPE=1")
	}
	err := k.script(context.Background(), "stop.sh")
	k.env = env
	k.killShims()
	return err
}

// warnPressure says when the node reports a pressure condition: its kubelet then rejects every new
// pod, which no fault of the nemesis did, so the run's last fires are not the product's.
func (k *Kube) warnPressure(ctx context.Context) {
	out, err := k.kubectlDo(ctx, "", "get", "node", "127.0.0.1", "-o",
		`jsonpath={range .status.conditions[?(@.status=="True")]}{.type} {end}`)
	if err != nil {
		return
	}
	for _, c := range strings.Fields(out) {
		if strings.HasSuffix(c, "Pressure") {
			k.Log.Warn("soak: the node reports a pressure condition: its kubelet rejects new pods; the run's last fires are the machine's, not the product's", "condition", c)
		}
	}
}
