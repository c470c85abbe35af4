package multicluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kwokcluster"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
	"github.com/ejcloud/elasticjob/internal/kwoksim"
)

// kubeNS is the Kubernetes namespace of the scheduler's pods: the one
// deploy/kubernetes/base/rbac.yaml gives it rights in.
const kubeNS = "elasticjob"

// kubeCluster is one Kubernetes cluster of a clusters-launch run:
// kwokcluster's control plane, kwok, and as many kwok nodes as the
// simulated agents it replaces, of the same size (8 CPUs, 32 GiB), with
// the scheduler's production rights. Its pods end by kwok's Stage after
// their job's run=… parameter (launchJob: 2–5 s, as the simulated tasks).
type kubeCluster struct {
	cp         *kwokcluster.ControlPlane
	kwok       *kwokcluster.Proc
	kubeconfig string // the scheduler's (a token of its service account)
}

func startKube(ctx context.Context, dir, kwokBin, name string, nodes int) (_ *kubeCluster, err error) {
	k := &kubeCluster{}
	defer func() {
		if err != nil {
			k.stop()
		}
	}()
	t := time.Now()
	if k.cp, err = kwokcluster.StartControlPlane(ctx, kwokcluster.Home(), dir, kwokcluster.Limits{}); err != nil {
		return nil, err
	}
	if k.kwok, err = kwokcluster.StartKwok(dir, kwokBin, k.cp.Admin, 16); err != nil {
		return nil, err
	}
	if err = kwokcluster.EnsureNamespace(ctx, k.cp.CS, kubeNS); err != nil {
		return nil, err
	}
	if err = kwokcluster.CreateNodes(ctx, k.cp.CS, k.kwok, name+"-node-", nodes, 8, 32, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("%w; kwok log tail:\n%s", err, bench.Tail(k.kwok.Log, 2000))
	}
	repo, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if k.kubeconfig, err = kwokcluster.SchedulerRights(ctx, k.cp.CS, repo, dir, k.cp.APIPort, k.cp.CA()); err != nil {
		return nil, err
	}
	bench.Logf("clusters-launch: Kubernetes cluster %s up with %d kwok nodes in %s (kube-apiserver on %d)", name, nodes, time.Since(t).Round(time.Second), k.cp.APIPort)
	return k, nil
}

// stop ends kwok, then the control plane.
func (k *kubeCluster) stop() {
	if k.kwok != nil {
		k.kwok.Stop()
	}
	if k.cp != nil {
		k.cp.Stop()
	}
}

// cpu is the CPU seconds the cluster's processes used so far.
func (k *kubeCluster) cpu() float64 {
	var t float64
	for _, p := range []*kwokcluster.Proc{k.cp.Etcd, k.cp.API, k.cp.KCM, k.cp.Sched, k.kwok} {
		if s, err := bench.ReadProc(p.PID()); err == nil {
			t += s.CPU
		}
	}
	return t
}

// apiCounts is the API server's requests so far: pods created, the
// scheduler's requests (its service account's token puts them in the flow
// schema service-accounts; the controllers' are kube-system's), and all.
func (k *kubeCluster) apiCounts(ctx context.Context) (created, sched, all float64) {
	b, err := k.cp.CS.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		bench.Logf("clusters-launch: API server metrics: %v", err)
		return 0, 0, 0
	}
	m := promtext.Parse(b)
	return m.Sum("apiserver_request_total", `code="201"`, `resource="pods"`, `subresource=""`, `verb="POST"`),
		m.Sum("apiserver_flowcontrol_dispatched_requests_total", `flow_schema="service-accounts"`), m.Sum("apiserver_request_total")
}

// kubeSetup is what the runs with Kubernetes clusters need once: the
// machine's Kubernetes lock and a kwok binary. The returned func releases
// the lock and removes a kwok built here.
func kubeSetup(ctx context.Context, o options) (string, func(), error) {
	home := kwokcluster.Home()
	if _, err := os.Stat(filepath.Join(home, "scripts/start.sh")); err != nil {
		return "", nil, fmt.Errorf("no Kubernetes build at %s for the Kubernetes clusters (set EJ_K8S_HOME)", home)
	}
	bin, cleanup := o.Kwok, func() {}
	if bin == "" {
		dir, rm, err := bench.TempDir(o.Env, "clusters-kwok")
		if err != nil {
			return "", nil, err
		}
		t := time.Now()
		bench.Logf("clusters-launch: building %s (-mc-kwok names a built one)", kwoksim.Module)
		if bin, err = kwoksim.Build(ctx, dir); err != nil {
			rm()
			return "", nil, err
		}
		bench.Logf("clusters-launch: kwok built in %s", time.Since(t).Round(time.Second))
		cleanup = rm
	} else if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("-mc-kwok: %w", err)
	}
	unlock, err := kwokcluster.Lock(ctx, 30*time.Minute, "clusters-launch")
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return bin, func() { unlock(); cleanup() }, nil
}
