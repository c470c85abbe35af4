package kubescale

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A control plane without a kubelet for the kube-scale scenario: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler of the single-node build (EJ_K8S_HOME), started
// with the flags of its scripts/start.sh on free loopback ports, each stopped by its pid.
// The nodes are kwok's (kwok.go).

// k8sLockPath is the machine's lock on the one real Kubernetes (docs/testing.md).
const k8sLockPath = "/tmp/ej-k8s.lock"

// lockK8s takes the lock, waiting for it at most wait; the returned func releases it.
// EJ_K8S_LOCK_HELD=1 says the harness runs under `flock /tmp/ej-k8s.lock …` already (a lock
// of its own would then wait on its parent's).
func lockK8s(ctx context.Context, wait time.Duration) (func(), error) {
	if os.Getenv("EJ_K8S_LOCK_HELD") == "1" {
		return func() {}, nil
	}
	f, err := os.OpenFile(k8sLockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", k8sLockPath, err)
	}
	deadline := time.Now().Add(wait)
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", k8sLockPath, err)
		}
		if !logged {
			bench.Logf("kube-scale: waiting for %s (another Kubernetes runs on this machine)", k8sLockPath)
			logged = true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("%s still held after %s", k8sLockPath, wait)
		}
		time.Sleep(2 * time.Second)
	}
}

// k8sHome is EJ_K8S_HOME, else ../shared/k8s-1.37 beside the repository.
func k8sHome() string {
	if h := os.Getenv("EJ_K8S_HOME"); h != "" {
		return h
	}
	dir, _ := os.Getwd()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "k8s-1.37")
		}
	}
	return filepath.Join("..", "shared", "k8s-1.37")
}

// proc is one process of the control plane (or kwok).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// startProc starts a process in its own process group, its output in dir/name.log.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// stop ends the process (SIGTERM, SIGKILL to its group after 15 s).
func (p *proc) stop() {
	if p == nil || !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// controlPlane is what startControlPlane started.
type controlPlane struct {
	dir, bin  string
	apiPort   int
	admin     string // admin kubeconfig (system:masters)
	procs     []*proc
	etcd, api *proc
	kcm, sch  *proc
	cs        kubernetes.Interface
	rc        *rest.Config
}

// cpOptions are the client limits of kube-controller-manager and kube-scheduler (0: their
// defaults, 20/30 and 50/100).
type cpOptions struct {
	kcmQPS, kcmBurst, schedQPS, schedBurst int
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager (without the node
// lifecycle controller: kwok's nodes renew no heartbeat it would watch) and kube-scheduler.
func startControlPlane(ctx context.Context, home, dir string, o cpOptions) (*controlPlane, error) {
	out, err := exec.Command(filepath.Join(home, "scripts/bin.sh")).Output()
	if err != nil {
		return nil, fmt.Errorf("%s/scripts/bin.sh: %w", home, err)
	}
	cp := &controlPlane{dir: dir, bin: strings.TrimSpace(string(out))}
	pki := filepath.Join(dir, "pki")
	if out, err := exec.Command(filepath.Join(home, "scripts/certs.sh"), pki, "127.0.0.1").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("certs.sh: %v\n%s", err, out)
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = bench.FreePort(); err != nil {
			return nil, err
		}
	}
	etcdPort, peerPort, kcmPort, schedPort := ports[0], ports[1], ports[3], ports[4]
	cp.apiPort = ports[2]
	ok := false
	defer func() {
		if !ok {
			cp.stop()
		}
	}()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	if cp.etcd, err = cp.start("etcd", "--name", "kube-scale", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kube-scale="+peerURL, "--unsafe-no-fsync", "--log-level", "warn",
		"--quota-backend-bytes", strconv.Itoa(8<<30)); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, cp.etcd, etcdURL+"/health", 30*time.Second); err != nil {
		return nil, err
	}
	p := func(f string) string { return filepath.Join(pki, f) }
	if cp.api, err = cp.start("kube-apiserver", "--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(cp.apiPort), "--advertise-address", "127.0.0.1",
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24", "--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction", "--endpoint-reconciler-type", "none",
		"--kubelet-preferred-address-types", "InternalIP,Hostname", "--profiling=false"); err != nil {
		return nil, err
	}
	for _, u := range []struct{ file, user, crt string }{{"admin", "admin", "admin"}, {"kcm", "kcm", "controller-manager"}, {"scheduler", "scheduler", "scheduler"}} {
		if err := writeKubeconfig(filepath.Join(dir, u.file+".kubeconfig"), cp.apiPort, p("ca.crt"), u.user, p(u.crt+".crt"), p(u.crt+".key"), ""); err != nil {
			return nil, err
		}
	}
	cp.admin = filepath.Join(dir, "admin.kubeconfig")
	if cp.rc, err = clientcmd.BuildConfigFromFlags("", cp.admin); err != nil {
		return nil, err
	}
	cp.rc.QPS, cp.rc.Burst = 2000, 4000
	cp.rc.UserAgent = "ejbench"
	if cp.cs, err = kubernetes.NewForConfig(cp.rc); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	kcm := filepath.Join(dir, "kcm.kubeconfig")
	kcmArgs := []string{"--kubeconfig", kcm, "--authentication-kubeconfig", kcm, "--authorization-kubeconfig", kcm,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort), "--leader-elect=false",
		"--use-service-account-credentials=true", "--root-ca-file", p("ca.crt"), "--service-account-private-key-file", p("sa.key"),
		"--controllers", "*,-node-lifecycle-controller", "--profiling=false"}
	if o.kcmQPS > 0 {
		kcmArgs = append(kcmArgs, "--kube-api-qps", strconv.Itoa(o.kcmQPS), "--kube-api-burst", strconv.Itoa(o.kcmBurst))
	}
	if cp.kcm, err = cp.start("kube-controller-manager", kcmArgs...); err != nil {
		return nil, err
	}
	sch := filepath.Join(dir, "scheduler.kubeconfig")
	schArgs := []string{"--kubeconfig", sch, "--authentication-kubeconfig", sch, "--authorization-kubeconfig", sch,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort), "--leader-elect=false", "--profiling=false"}
	if o.schedQPS > 0 {
		cfg := filepath.Join(dir, "scheduler.yaml")
		y := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\n"+
			"clientConnection: {kubeconfig: %q, qps: %d, burst: %d}\n", sch, o.schedQPS, o.schedBurst)
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			return nil, err
		}
		schArgs = append([]string{"--config", cfg}, schArgs[2:]...)
	}
	if cp.sch, err = cp.start("kube-scheduler", schArgs...); err != nil {
		return nil, err
	}
	ok = true
	return cp, nil
}

func (cp *controlPlane) start(name string, args ...string) (*proc, error) {
	p, err := startProc(cp.dir, name, filepath.Join(cp.bin, name), args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

// stop ends every process, the last started first.
func (cp *controlPlane) stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop()
	}
	cp.procs = nil
}

// waitReady polls the API server's /readyz.
func (cp *controlPlane) waitReady(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		body, err := cp.cs.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		if !cp.api.alive() {
			return fmt.Errorf("kube-apiserver exited; log tail:\n%s", bench.Tail(cp.api.log, 2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kube-apiserver not ready after %s: %v; log tail:\n%s", d, err, bench.Tail(cp.api.log, 2000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, p *proc, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.alive() {
			return fmt.Errorf("%s exited; log tail:\n%s", p.name, bench.Tail(p.log, 2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not healthy after %s; log tail:\n%s", p.name, d, bench.Tail(p.log, 2000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeKubeconfig writes a kubeconfig with a client certificate, or a token when token != "".
func writeKubeconfig(path string, port int, ca, user, crt, key, token string) error {
	cred := fmt.Sprintf("{client-certificate: %q, client-key: %q}", crt, key)
	if token != "" {
		cred = fmt.Sprintf("{token: %q}", token)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:%d", certificate-authority: %q}
users:
- name: %s
  user: %s
contexts:
- name: local
  context: {cluster: local, user: %s}
current-context: local
`, port, ca, user, cred, user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
