package kwokcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// CA is the cluster's CA certificate (the API server's, the clients').
func (cp *ControlPlane) CA() string { return filepath.Join(cp.Dir, "pki", "ca.crt") }

// LockPath is the machine's lock on the one real Kubernetes (docs/testing.md).
const LockPath = "/tmp/ej-k8s.lock"

// Lock takes the lock, waiting for it at most wait; the returned func releases it.
// EJ_K8S_LOCK_HELD=1 says the harness runs under `flock /tmp/ej-k8s.lock …` already (a lock
// of its own would then wait on its parent's).
func Lock(ctx context.Context, wait time.Duration, who string) (func(), error) {
	if os.Getenv("EJ_K8S_LOCK_HELD") == "1" {
		return func() {}, nil
	}
	f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", LockPath, err)
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
			return nil, fmt.Errorf("flock %s: %w", LockPath, err)
		}
		if !logged {
			bench.Logf("%s: waiting for %s (another Kubernetes runs on this machine)", who, LockPath)
			logged = true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("%s still held after %s", LockPath, wait)
		}
		time.Sleep(2 * time.Second)
	}
}

// Home is EJ_K8S_HOME, else ../shared/k8s-1.37 beside the repository.
func Home() string {
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

// Proc is one process of the control plane (or kwok).
type Proc struct {
	Name string
	cmd  *exec.Cmd
	Log  string
	done chan struct{}
}

// PID is the process's id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Alive reports whether the process has not exited.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// startProc starts a process in its own process group, its output in dir/name.log.
func startProc(dir, name, bin string, args ...string) (*Proc, error) {
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
	p := &Proc{Name: name, cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// Stop ends the process (SIGTERM, SIGKILL to its group after 15 s).
func (p *Proc) Stop() {
	if p == nil || !p.Alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// ControlPlane is what StartControlPlane started.
type ControlPlane struct {
	Dir, bin   string
	APIPort    int
	Admin      string // admin kubeconfig (system:masters)
	procs      []*Proc
	Etcd, API  *Proc
	KCM, Sched *Proc
	CS         kubernetes.Interface
	RC         *rest.Config // Admin's, at 2,000/4,000 QPS/burst
}

// Limits are the client limits of kube-controller-manager and kube-scheduler (0: their
// defaults, 20/30 and 50/100).
type Limits struct {
	KCMQPS, KCMBurst, SchedQPS, SchedBurst int
}

// StartControlPlane starts etcd, kube-apiserver, kube-controller-manager (without the node
// lifecycle controller: kwok's nodes renew no heartbeat it would watch) and kube-scheduler.
func StartControlPlane(ctx context.Context, home, dir string, o Limits) (*ControlPlane, error) {
	out, err := exec.Command(filepath.Join(home, "scripts/bin.sh")).Output()
	if err != nil {
		return nil, fmt.Errorf("%s/scripts/bin.sh: %w", home, err)
	}
	cp := &ControlPlane{Dir: dir, bin: strings.TrimSpace(string(out))}
	pki := filepath.Join(dir, "pki")
	if out, err := exec.Command(filepath.Join(home, "scripts/certs.sh"), pki, "127.0.0.1").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("certs.sh: %v\n%s", err, out)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = bench.FreePort(); err != nil {
			return nil, err
		}
	}
	etcdPort, peerPort := ports[0], ports[1]
	cp.APIPort = ports[2]
	ok := false
	defer func() {
		if !ok {
			cp.Stop()
		}
	}()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	if cp.Etcd, err = cp.start("etcd", "--name", "kwok", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kwok="+peerURL, "--unsafe-no-fsync", "--log-level", "warn",
		"--quota-backend-bytes", strconv.Itoa(8<<30)); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, cp.Etcd, etcdURL+"/health", 30*time.Second); err != nil {
		return nil, err
	}
	p := func(f string) string { return filepath.Join(pki, f) }
	if cp.API, err = cp.start("kube-apiserver", "--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(cp.APIPort), "--advertise-address", "127.0.0.1",
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24", "--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction", "--endpoint-reconciler-type", "none",
		"--kubelet-preferred-address-types", "InternalIP,Hostname", "--profiling=false"); err != nil {
		return nil, err
	}
	for _, u := range []struct{ file, user, crt string }{{"admin", "admin", "admin"}, {"kcm", "kcm", "controller-manager"}, {"scheduler", "scheduler", "scheduler"}} {
		if err := writeKubeconfig(filepath.Join(dir, u.file+".kubeconfig"), cp.APIPort, p("ca.crt"), u.user, p(u.crt+".crt"), p(u.crt+".key"), ""); err != nil {
			return nil, err
		}
	}
	cp.Admin = filepath.Join(dir, "admin.kubeconfig")
	if cp.RC, err = clientcmd.BuildConfigFromFlags("", cp.Admin); err != nil {
		return nil, err
	}
	cp.RC.QPS, cp.RC.Burst = 2000, 4000
	cp.RC.UserAgent = "ejbench"
	if cp.CS, err = kubernetes.NewForConfig(cp.RC); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	kcm := filepath.Join(dir, "kcm.kubeconfig")
	kcmArgs := []string{"--kubeconfig", kcm, "--authentication-kubeconfig", kcm, "--authorization-kubeconfig", kcm,
		"--bind-address", "127.0.0.1", "--leader-elect=false",
		"--use-service-account-credentials=true", "--root-ca-file", p("ca.crt"), "--service-account-private-key-file", p("sa.key"),
		"--controllers", "*,-node-lifecycle-controller", "--profiling=false"}
	if o.KCMQPS > 0 {
		kcmArgs = append(kcmArgs, "--kube-api-qps", strconv.Itoa(o.KCMQPS), "--kube-api-burst", strconv.Itoa(o.KCMBurst))
	}
	if cp.KCM, err = cp.startServing(ctx, "kube-controller-manager", kcmArgs...); err != nil {
		return nil, err
	}
	sch := filepath.Join(dir, "scheduler.kubeconfig")
	schArgs := []string{"--kubeconfig", sch, "--authentication-kubeconfig", sch, "--authorization-kubeconfig", sch,
		"--bind-address", "127.0.0.1", "--leader-elect=false", "--profiling=false"}
	if o.SchedQPS > 0 {
		cfg := filepath.Join(dir, "scheduler.yaml")
		y := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\n"+
			"clientConnection: {kubeconfig: %q, qps: %d, burst: %d}\n", sch, o.SchedQPS, o.SchedBurst)
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			return nil, err
		}
		schArgs = append([]string{"--config", cfg}, schArgs[2:]...)
	}
	if cp.Sched, err = cp.startServing(ctx, "kube-scheduler", schArgs...); err != nil {
		return nil, err
	}
	ok = true
	return cp, nil
}

func (cp *ControlPlane) start(name string, args ...string) (*Proc, error) {
	p, err := startProc(cp.Dir, name, filepath.Join(cp.bin, name), args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

// startServing starts a component that serves on a --secure-port of its own and waits
// until it answers there. A free port is only free when it is chosen: another process may
// bind it before the component does, which then exits; it is started again on another port
// (three times at most).
func (cp *ControlPlane) startServing(ctx context.Context, name string, args ...string) (*Proc, error) {
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var err error
	for range 3 {
		port, perr := bench.FreePort()
		if perr != nil {
			return nil, perr
		}
		p, serr := cp.start(name, append(slices.Clone(args), "--secure-port", strconv.Itoa(port))...)
		if serr != nil {
			return nil, serr
		}
		if err = waitHTTPWith(ctx, insecure, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), 90*time.Second); err == nil {
			return p, nil
		}
		if p.Alive() || !strings.Contains(bench.Tail(p.Log, 4000), "address already in use") {
			return nil, err
		}
		cp.procs = slices.DeleteFunc(cp.procs, func(q *Proc) bool { return q == p })
	}
	return nil, err
}

// Stop ends every process, the last started first.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop()
	}
	cp.procs = nil
}

// waitReady polls the API server's /readyz.
func (cp *ControlPlane) waitReady(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		body, err := cp.CS.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		if !cp.API.Alive() {
			return fmt.Errorf("kube-apiserver exited; log tail:\n%s", bench.Tail(cp.API.Log, 2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kube-apiserver not ready after %s: %v; log tail:\n%s", d, err, bench.Tail(cp.API.Log, 2000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, p *Proc, url string, d time.Duration) error {
	return waitHTTPWith(ctx, http.DefaultClient, p, url, d)
}

func waitHTTPWith(ctx context.Context, c *http.Client, p *Proc, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.Alive() {
			return fmt.Errorf("%s exited; log tail:\n%s", p.Name, bench.Tail(p.Log, 2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not healthy after %s; log tail:\n%s", p.Name, d, bench.Tail(p.Log, 2000))
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
