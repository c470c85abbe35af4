package soak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/internal/kwoksim"
	"github.com/ejcloud/elasticjob/internal/loopback"
	"github.com/ejcloud/elasticjob/internal/soak/runlog"
	"github.com/ejcloud/elasticjob/jobs"
)

// kwokCluster is a second Kubernetes control plane on this machine: etcd
// and kube-apiserver of the single-node build (its binaries and its
// certs.sh, start.sh's flags) on free loopback ports, with no kubelet
// and no controller-manager, and kwok playing its nodes. The single-node
// build's one-per-machine limit is its kubelet's (the kubepods cgroups,
// its ports): a control plane without one runs beside it.
//
// No process runs a task here, so the run log is written by a watch of
// the pods (record): a pod's start when kwok marks it Running, its end
// when it ends or is deleted before, each from the task payload in the
// pod's environment, as mesos-local's simulated agents write theirs.
type kwokCluster struct {
	home, kwokBin, dir, runLog string
	nodes                      int
	log                        *slog.Logger

	bin        string // the build's binaries
	etcd, api  *proc
	kwok       *proc
	apiAddr    string
	admin      string // the admin kubeconfig, straight to the API server
	cs         kubernetes.Interface
	w          *runlog.Writer
	stopRecord context.CancelFunc
	recorded   sync.WaitGroup
	seq        int // the nodes made so far (the next one's name)

	mu   sync.Mutex         // guards runs: the recorder's and loseNode's
	runs map[string]*podRun // by task id
}

func (k *kwokCluster) start(ctx context.Context) error {
	if _, err := os.Stat(k.kwokBin); err != nil {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(k.home, "scripts", "bin.sh")).Output()
	if err != nil {
		return fmt.Errorf("soak: kwok: bin.sh: %w", err)
	}
	k.bin = strings.TrimSpace(string(out))
	pki := filepath.Join(k.dir, "pki")
	if out, err := exec.CommandContext(ctx, filepath.Join(k.home, "scripts", "certs.sh"), pki, "127.0.0.1").CombinedOutput(); err != nil {
		return fmt.Errorf("soak: kwok: certs.sh: %w: %s", err, tail(out, 600))
	}
	etcdPort, err := loopback.Pair()
	if err != nil {
		return err
	}
	apiPort, err := loopback.Port()
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort+1)
	k.etcd = &proc{name: "kwok-etcd", bin: filepath.Join(k.bin, "etcd"), log: filepath.Join(k.dir, "etcd.log"),
		args: []string{"--name", "kwok", "--data-dir", filepath.Join(k.dir, "etcd"),
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "kwok=" + peerURL, "--unsafe-no-fsync", "--log-level", "warn"}}
	if err := k.etcd.start(); err != nil {
		return err
	}
	p := func(f string) string { return filepath.Join(pki, f) }
	k.apiAddr = "127.0.0.1:" + strconv.Itoa(apiPort)
	k.api = &proc{name: "kwok-apiserver", bin: filepath.Join(k.bin, "kube-apiserver"), log: filepath.Join(k.dir, "kube-apiserver.log"),
		args: []string{"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort),
			"--advertise-address", "127.0.0.1", "--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
			"--client-ca-file", p("ca.crt"), "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
			"--service-cluster-ip-range", "10.96.0.0/24", "--authorization-mode", "Node,RBAC",
			"--enable-admission-plugins", "NodeRestriction", "--endpoint-reconciler-type", "none",
			"--kubelet-preferred-address-types", "InternalIP,Hostname", "--profiling=false"}}
	if err := k.api.start(); err != nil {
		return err
	}
	k.admin = filepath.Join(k.dir, "admin.kubeconfig")
	if err := writeKubeconfig(k.admin, k.apiAddr, p("ca.crt"), p("admin.crt"), p("admin.key")); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", k.admin)
	if err != nil {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	if k.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	if err := k.awaitAPI(ctx, 2*time.Minute); err != nil {
		return err
	}
	// What the controller-manager would make: the pods' service account
	// and the root CA map.
	ca, err := os.ReadFile(p("ca.crt"))
	if err != nil {
		return err
	}
	if _, err := k.cs.CoreV1().ServiceAccounts(kubeNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	if _, err := k.cs.CoreV1().ConfigMaps(kubeNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	cfg := filepath.Join(k.dir, "kwok.yaml")
	if err := os.WriteFile(cfg, []byte(kwokConfig), 0o644); err != nil {
		return err
	}
	k.kwok = &proc{name: "kwok", bin: k.kwokBin, log: filepath.Join(k.dir, "kwok.log"),
		args: []string{"--kubeconfig", k.admin, "--config", cfg, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector", kwoksim.NodeAnnotation + "=fake", "--node-ip", "127.0.0.1"}}
	if err := k.kwok.start(); err != nil {
		return err
	}
	for range max(1, k.nodes) {
		if err := k.addNode(ctx); err != nil {
			return err
		}
	}
	if err := k.awaitNodes(ctx, time.Minute); err != nil {
		return err
	}
	if k.w, err = runlog.Open(k.runLog); err != nil {
		return err
	}
	k.runs = map[string]*podRun{}
	rctx, cancel := context.WithCancel(context.Background())
	k.stopRecord = cancel
	k.recorded.Add(1)
	go func() { defer k.recorded.Done(); k.record(rctx) }()
	return nil
}

// writeKubeconfig writes a kubeconfig with a client certificate for the
// API server at addr.
func writeKubeconfig(path, addr, ca, crt, key string) error {
	b := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://%s", certificate-authority: %q}
users:
- name: admin
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, addr, ca, crt, key)
	return os.WriteFile(path, []byte(b), 0o600)
}

// awaitAPI waits until the API server answers /readyz.
func (k *kwokCluster) awaitAPI(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var last error
	for time.Now().Before(deadline) {
		body, err := k.cs.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		last = err
		if !k.api.running() {
			b, _ := os.ReadFile(k.api.log)
			return fmt.Errorf("soak: kwok: kube-apiserver exited: %s", tail(b, 1000))
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: kwok: kube-apiserver not ready within %s: %v", bound, last)
}

// addNode creates the next kwok node (4 CPUs, 8 GiB), named kwok-N: a
// node lost is replaced by a new one, as a machine is, never brought back
// under its name.
func (k *kwokCluster) addNode(ctx context.Context) error {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	name := "kwok-" + strconv.Itoa(k.seq)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwoksim.NodeAnnotation: "fake"},
		Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name}}, Status: corev1.NodeStatus{Allocatable: res, Capacity: res}}
	if _, err := k.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("soak: kwok: node %s: %w", name, err)
	}
	k.seq++
	return nil
}

// awaitNodes waits until kwok made the cluster's nodes Ready and lifts
// the not-ready taint the API server gave them (the node lifecycle
// controller's part).
func (k *kwokCluster) awaitNodes(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		l, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		ready := 0
		if err == nil {
			for _, n := range l.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if err == nil && ready >= max(1, k.nodes) {
			for _, n := range l.Items {
				if len(n.Spec.Taints) == 0 {
					continue
				}
				if _, err := k.cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
					return fmt.Errorf("soak: kwok: untaint %s: %w", n.Name, err)
				}
			}
			return nil
		}
		if !k.kwok.running() {
			b, _ := os.ReadFile(k.kwok.log)
			return fmt.Errorf("soak: kwok exited: %s", tail(b, 1000))
		}
		if !sleep(ctx, 300*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: kwok: its nodes not Ready within %s", bound)
}

// podRun is what the recorder knows of one task pod.
type podRun struct {
	started, ended, daemon bool
}

// record writes the run log for the kwok cluster's task pods: it lists
// them and watches from there, and lists again whenever the watch ends
// (the API server stopped by the nemesis), until ctx ends.
func (k *kwokCluster) record(ctx context.Context) {
	pods := k.cs.CoreV1().Pods(kubeNS)
	opts := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy}
	for ctx.Err() == nil {
		l, err := pods.List(ctx, opts)
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		k.mu.Lock()
		for i := range l.Items {
			k.observe(&l.Items[i], false)
		}
		k.mu.Unlock()
		wo := opts
		wo.ResourceVersion = l.ResourceVersion
		w, err := pods.Watch(ctx, wo)
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
				k.mu.Lock()
				k.observe(p, ev.Type == watch.Deleted)
				k.mu.Unlock()
			}
		}
		w.Stop()
	}
}

// observe records what a pod's state says of its run: its start once it
// runs (or ended), its end once it ended, or was deleted before (killed).
// A DAEMON's pod never ends in kwok's play; its start alone is recorded,
// as a real DAEMON task records only its first run. Called with k.mu held.
func (k *kwokCluster) observe(p *corev1.Pod, deleted bool) *podRun {
	task := p.Annotations[kube.AnnotationTask]
	if task == "" {
		return nil
	}
	r := k.runs[task]
	if r == nil {
		r = &podRun{}
		k.runs[task] = r
	}
	now := time.Now()
	phase := p.Status.Phase
	if !r.started && (phase == corev1.PodRunning || phase == corev1.PodSucceeded || phase == corev1.PodFailed) {
		r.started = true
		data := podTaskData(p)
		l, err := runlog.FromTaskData(task, now, data)
		if err != nil {
			k.log.Warn("soak: kwok: a task pod's payload", "pod", p.Name, "err", err)
			l = runlog.Line{Ev: runlog.Start, At: now.UTC(), Task: task}
		}
		if td, err := jobs.UnmarshalTaskData(data); err == nil && td.Job.JobExecutionType == jobs.Daemon {
			r.daemon = true
		}
		k.append(l)
	}
	if !r.started || r.ended || r.daemon {
		return r
	}
	state := ""
	switch {
	case phase == corev1.PodSucceeded:
		state = "TASK_FINISHED"
	case phase == corev1.PodFailed:
		state = "TASK_FAILED"
	case deleted:
		state = "TASK_KILLED"
	}
	if state != "" {
		r.ended = true
		k.append(runlog.Line{Ev: runlog.End, At: now.UTC(), Task: task, State: state})
	}
	return r
}

func (k *kwokCluster) append(l runlog.Line) {
	if err := k.w.Append(l); err != nil {
		k.log.Warn("soak: kwok: run log", "err", err)
	}
}

// podTaskData is the task payload in a task pod's environment.
func podTaskData(p *corev1.Pod) []byte {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == kube.EnvTaskData {
				return []byte(e.Value)
			}
		}
	}
	return nil
}

// loseNode takes one of the nodes away with its runs, as a machine that
// is gone: kwok, which plays every node, is killed first, so that no run
// there ends after its machine did (a status kwok sent as it died lands
// within the pause); each run on the node is recorded as ended TASK_LOST;
// the node object is deleted, as the cloud's node controller deletes a
// vanished machine's; and kwok starts again, playing the nodes left. The
// node's pods stay bound to it, never played again, until the Kubernetes
// engine deletes them after its pod GC's quarantine (NodeGone). The node
// is drawn among those running the most task pods (the engine fills one
// node before the next: an idle one's loss would take no run along); one
// node at least is left.
func (k *kwokCluster) loseNode(ctx context.Context, rng *rand.Rand) (string, error) {
	l, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return "", fmt.Errorf("soak: kwok: %w", err)
	}
	if len(l.Items) < 2 {
		return "", fmt.Errorf("soak: kwok: %d node(s): none to lose", len(l.Items))
	}
	running := map[string]int{}
	for _, n := range l.Items {
		running[n.Name] = 0
	}
	all, err := k.cs.CoreV1().Pods(kubeNS).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		return "", fmt.Errorf("soak: kwok: %w", err)
	}
	for _, p := range all.Items {
		if _, ok := running[p.Spec.NodeName]; ok && p.Status.Phase == corev1.PodRunning {
			running[p.Spec.NodeName]++
		}
	}
	most := slices.Max(slices.Collect(maps.Values(running)))
	var names []string
	for n, c := range running {
		if c == most {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	name := names[rng.IntN(len(names))]
	k.kwok.kill()
	err = func() error {
		sleep(ctx, 500*time.Millisecond)
		pods, err := k.cs.CoreV1().Pods(kubeNS).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy,
			FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			return fmt.Errorf("soak: kwok: the pods of %s: %w", name, err)
		}
		k.loseRuns(name, pods.Items)
		if err := k.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("soak: kwok: delete node %s: %w", name, err)
		}
		return nil
	}()
	return name, errors.Join(err, k.restartKwok(ctx))
}

// nodeLeaseNS is where the node leases are.
const nodeLeaseNS = "kube-node-lease"

// restartKwok starts kwok again on the nodes' leases deleted. Each kwok
// process holds a node's lease under an identity of its own and plays
// only the pods of the nodes whose lease it holds: a new process would
// leave every node the dead one held alone until its lease expired (an
// hour), their pods never run.
func (k *kwokCluster) restartKwok(ctx context.Context) error {
	l, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	for _, n := range l.Items {
		if err := k.cs.CoordinationV1().Leases(nodeLeaseNS).Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("soak: kwok: the lease of %s: %w", n.Name, err)
		}
	}
	return k.kwok.start()
}

// loseRuns records the runs of node's pods as they were when it went:
// what their state says (a start not recorded yet, an end), then each run
// still going as ended TASK_LOST. A DAEMON's run records no end, as
// ever.
func (k *kwokCluster) loseRuns(node string, pods []corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node {
			continue
		}
		if r := k.observe(p, false); r != nil && r.started && !r.ended && !r.daemon {
			r.ended = true
			k.append(runlog.Line{Ev: runlog.End, At: time.Now().UTC(), Task: p.Annotations[kube.AnnotationTask], State: "TASK_LOST"})
		}
	}
}

// replaceNode adds a new node in place of one lost and waits until it is
// Ready.
func (k *kwokCluster) replaceNode(ctx context.Context) error {
	if err := k.addNode(ctx); err != nil {
		return err
	}
	return k.awaitNodes(ctx, time.Minute)
}

// restore starts kwok again if it is down and adds nodes until the
// cluster has its own number again (a node-gone fault's heal that
// failed).
func (k *kwokCluster) restore(ctx context.Context) error {
	if !k.kwok.running() {
		if err := k.restartKwok(ctx); err != nil {
			return err
		}
	}
	l, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return fmt.Errorf("soak: kwok: %w", err)
	}
	for n := len(l.Items); n < max(1, k.nodes); n++ {
		if err := k.addNode(ctx); err != nil {
			return err
		}
	}
	return k.awaitNodes(ctx, time.Minute)
}

// stopAPI kills the API server (the cluster lost to every client);
// startAPI starts it again on the same etcd and waits until it is ready.
func (k *kwokCluster) stopAPI() { k.api.kill() }

func (k *kwokCluster) startAPI(ctx context.Context) error {
	if k.api.running() {
		return nil
	}
	if err := k.api.start(); err != nil {
		return err
	}
	return k.awaitAPI(ctx, time.Minute)
}

func (k *kwokCluster) stop() error {
	var errs []error
	if k.stopRecord != nil {
		k.stopRecord()
		k.recorded.Wait()
		k.stopRecord = nil
	}
	for _, p := range []*proc{k.kwok, k.api, k.etcd} {
		if p != nil {
			p.stop(10 * time.Second)
		}
	}
	if k.w != nil {
		errs = append(errs, k.w.Close())
		k.w = nil
	}
	return errors.Join(errs...)
}

// kwokConfig is kwok's configuration and the Stages it plays: a node
// becomes Ready with the allocatable it was created with; a pod bound to
// one of its nodes runs at once and, unless its task is a DAEMON, ends
// 1.5 s later with exit code 0 (a kubelet's Succeeded); a deleted pod goes
// at once. Node leases last an hour: there is no node lifecycle
// controller to read them.
var kwokConfig = kwoksim.Stages(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeLeaseDurationSeconds: 3600
  nodeLeaseParallelism: 2
  nodePlayStageParallelism: 2
  podPlayStageParallelism: 4
  podsOnNodeSyncParallelism: 2
`, kwoksim.NodeInitialize, kwoksim.PodRunning, `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-end}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - key: '[(.spec.containers[0].env // [])[] | select(.name == "ELASTICJOB_TASK_DATA") | .value | fromjson | .job.jobExecutionType][0]'
      operator: NotIn
      values: [DAEMON]
  delay:
    durationMilliseconds: 1500
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated: {exitCode: 0, finishedAt: {{ $now | Quote }}, reason: Completed, startedAt: {{ $now | Quote }}}
      {{ end }}
      phase: Succeeded
`, kwoksim.PodDelete)
