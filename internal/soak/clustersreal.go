package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The clusters shape's Kubernetes clusters (Clusters.KubeHome): the real
// one, kwok's, their faults.

// ClustersReal is the clusters shape on real engines (ShapeClustersReal):
// its runs are real processes and pods that report to the recorder,
// sized for a real kubelet.
type ClustersReal struct{ *Clusters }

var _ realRuns = ClustersReal{}

// AppURL is the recorder's app package: every real run posts its start
// and end (the kube cluster's pods cannot reach a file on the host).
func (c ClustersReal) AppURL() string { return c.rec.url + "/app.tgz" }

// Sizes are the kube shape's: one kubelet on two shared cores beside two
// Mesos clusters, the embedded engine and kwok.
func (c ClustersReal) Sizes() Sizes { return (&Kube{}).Sizes() }

// Settle: a pod starts seconds after its launch on a busy node.
func (c ClustersReal) Settle() time.Duration { return 30 * time.Second }

// Pinned: a third of the jobs name the kube cluster, a sixth the real
// Mesos one and a sixth kwok's, each with local after it (where they run
// while their cluster is lost, cut off or drained); the others run where
// their namespace says, mostly on remote. Without it the real clusters
// and kwok's would run only the few jobs the workload moves there and the
// namespace's moves, and a kwok node would seldom go with runs on it.
func (c ClustersReal) Pinned(i int) []string {
	switch i % 6 {
	case 1, 4:
		return []string{ClusterKube, ClusterLocal}
	case 3:
		return []string{ClusterReal, ClusterLocal}
	case 5:
		return []string{ClusterKwok, ClusterLocal}
	}
	return nil
}

// startKube starts the recorder, the real Kubernetes (the executor image
// imported, a warm-up pod run) and the kwok cluster, each behind a proxy
// of its own, and returns their entries of the clusters file.
func (c *Clusters) startKube(ctx context.Context) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("soak: clusters-real runs a kubelet: run it as root")
	}
	for _, s := range []string{"start.sh", "stop.sh", "bin.sh", "certs.sh"} {
		if _, err := os.Stat(filepath.Join(c.KubeHome, "scripts", s)); err != nil {
			return "", fmt.Errorf("soak: clusters-real: the Kubernetes build at %s (-k8s-home): %w", c.KubeHome, err)
		}
	}
	if c.KwokBin == "" {
		return "", errors.New("soak: clusters-real needs kwok (-kwok)")
	}
	exe := filepath.Join(c.Bin, "executor")
	if err := static(exe); err != nil {
		return "", err
	}
	var err error
	if c.rec, err = startHTTPRecorder(c.RunLog); err != nil {
		return "", err
	}
	c.kube = &Kube{Etcd: Etcd{ZK: ZK{Bin: c.Bin, Dir: c.Dir, Log: c.Log}}, Home: c.KubeHome}
	if err := c.kube.startCluster(ctx); err != nil {
		return "", err
	}
	if err := c.kube.importImage(ctx, exe); err != nil {
		return "", err
	}
	if err := c.kube.warmUp(ctx); err != nil {
		return "", err
	}
	kubeCfg, err := c.proxiedKubeconfig(filepath.Join(c.kube.run, "admin.kubeconfig"), c.kube.apiAddr, "kube", &c.toKube)
	if err != nil {
		return "", err
	}
	c.kwok = &kwokCluster{home: c.KubeHome, kwokBin: c.KwokBin, dir: filepath.Join(c.Dir, "kwok"), runLog: c.RunLog, nodes: 2, log: c.Log}
	if err := c.kwok.start(ctx); err != nil {
		return "", err
	}
	kwokCfg, err := c.proxiedKubeconfig(c.kwok.admin, c.kwok.apiAddr, "kwok", &c.toKwok)
	if err != nil {
		return "", err
	}
	entry := func(name, cfg string) string {
		return fmt.Sprintf("  - {name: %s, engine: kubernetes, kube_config: %q, kube_namespace: %s, lost_after: %s}\n", name, cfg, kubeNS, kubeLostAfter)
	}
	return entry(ClusterKube, kubeCfg) + entry(ClusterKwok, kwokCfg), nil
}

// proxiedKubeconfig starts a proxy in front of the API server at addr and
// writes a copy of the admin kubeconfig that reaches it through the
// proxy (the certificate names 127.0.0.1, whatever the port).
func (c *Clusters) proxiedKubeconfig(admin, addr, name string, link **proxy) (string, error) {
	b, err := os.ReadFile(admin)
	if err != nil {
		return "", fmt.Errorf("soak: %w", err)
	}
	if *link, err = newProxy(addr); err != nil {
		return "", err
	}
	cfg := filepath.Join(c.Dir, name+".kubeconfig")
	doc := strings.Replace(string(b), "https://"+addr, "https://"+(*link).addr(), 1)
	return cfg, os.WriteFile(cfg, []byte(doc), 0o600)
}

// kubeFaults are the Kubernetes clusters' faults: an API server stopped
// (kill -9; the real one started again by start.sh), the scheduler cut
// from one. Both are held under task_unreachable_timeout, as a cut from
// a Mesos cluster is; lost_after (kubeLostAfter) covers the restart. And
// a kwok node gone with its runs (NodeGone), a new one in its place once
// healed: the engine's pod GC ends the tasks left on it. And the real
// node crashed (NodeCrashed: the kube shape's node loss, its containers
// killed with its kubelet), back after 10 s to a minute: before the pod
// GC's quarantine ends its pods are kept and the kubelet reports their
// containers' ends, after it they are gone and their tasks lost.
func (c *Clusters) kubeFaults() []FaultKind {
	pick := func(rng *rand.Rand) string { return []string{ClusterKube, ClusterKwok}[rng.IntN(2)] }
	return []FaultKind{
		{Name: "apiserver-stopped", MinHold: 2 * time.Second, MaxHold: clustersUnreachable - 2*time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			name := pick(rng)
			if name == ClusterKwok {
				c.kwok.stopAPI()
				return c.kwok.startAPI, "cluster " + name + " (kube-apiserver)", nil
			}
			if err := c.kube.stopComponent("kube-apiserver", syscall.SIGKILL); err != nil {
				return nil, "", err
			}
			return c.kube.restartCluster, "cluster " + name + " (kube-apiserver)", nil
		}},
		{Name: "leader-cut-from-apiserver", MinHold: 2 * time.Second, MaxHold: clustersUnreachable - 2*time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			name := pick(rng)
			link := c.toKube
			if name == ClusterKwok {
				link = c.toKwok
			}
			link.set(true, 0)
			return func(context.Context) error { link.set(false, 0); return nil }, "cluster " + name, nil
		}},
		{Name: NodeGone, MinHold: 2 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			node, err := c.kwok.loseNode(ctx, rng)
			if err != nil {
				return nil, "", err
			}
			return c.kwok.replaceNode, "cluster " + ClusterKwok + " (node " + node + ")", nil
		}},
		{Name: NodeCrashed, MinHold: 10 * time.Second, MaxHold: time.Minute, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			heal, node, err := c.kube.downNode(ctx, c.rec.lose)
			if err != nil {
				return nil, "", err
			}
			return heal, "cluster " + ClusterKube + " (node " + node + ")", nil
		}},
	}
}

// healKube undoes the Kubernetes clusters' faults.
func (c *Clusters) healKube(ctx context.Context) error {
	var errs []error
	for _, l := range []*proxy{c.toKube, c.toKwok} {
		if l != nil {
			l.set(false, 0)
		}
	}
	if c.kube != nil && c.kube.started && (c.kube.component("kube-apiserver") == 0 || c.kube.component("kubelet") == 0) {
		errs = append(errs, c.kube.restartCluster(ctx))
	}
	if c.kwok != nil && c.kwok.api != nil {
		errs = append(errs, c.kwok.startAPI(ctx))
	}
	if c.kwok != nil && c.kwok.kwok != nil {
		errs = append(errs, c.kwok.restore(ctx))
	}
	return errors.Join(errs...)
}

// stopKube stops the kwok cluster and the real Kubernetes (stop.sh, once
// start.sh ran), then the proxies and the recorder.
func (c *Clusters) stopKube() error {
	var errs []error
	if c.kwok != nil {
		errs = append(errs, c.kwok.stop())
		c.kwok = nil
	}
	if c.kube != nil {
		errs = append(errs, c.kube.stopCluster())
		c.kube = nil
	}
	for _, l := range []**proxy{&c.toKube, &c.toKwok} {
		if *l != nil {
			(*l).close()
			*l = nil
		}
	}
	if c.rec != nil {
		errs = append(errs, c.rec.close())
		c.rec = nil
	}
	return errors.Join(errs...)
}
