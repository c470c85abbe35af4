package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/clusters"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
)

// termEngine is what a leader term runs its scheduler on: the engine's driver, its
// inventory, and Run, which feeds the scheduler until the term ends.
type termEngine interface {
	engine.Driver
	engine.Inventory
	Run(ctx context.Context, h engine.Handler) error
}

// engineReads is what the API reads of the engine on any instance, leading or not.
type engineReads interface {
	engine.Declarer
	engine.Logs
	engine.Sandboxes
	engine.ClusterView
	engine.Inventory
}

// The API reads the engine through engine's own interfaces: what run.go hands it as
// api.Options.Engine.
var _ api.Engine = engineReads(nil)

// engines is the cluster engine the settings choose for the whole process: Mesos (the
// embedded master and agent, or mesos_url) or Kubernetes (kube_config, kube_in_cluster).
type engines struct {
	name    string // "mesos", "kubernetes"
	reads   engineReads
	newTerm func(reg *registry.Registry, frameworkID string, log *slog.Logger) (termEngine, error)
	exe     delivery // how the executor reaches the agents (Mesos)
	// reportURLs are where executors reach the schedulers (their secrets, their reports).
	reportURLs []string

	// rejectFileURLs: apps may not name file:// URLs (the tasks run on other machines).
	rejectFileURLs bool
	// Kubernetes only (nil on Mesos): the process's engine (executors' reports, podTemplate
	// checks, namespace caps) and its clients (the definitions' objects, crds.go).
	kube  *kube.Cluster
	kubes kube.Clients
}

// kubeTails keeps the Kubernetes engine's log tails in the registry (kube.TailStore): the
// engine owns the interface, so it imports no registry.
type kubeTails struct{ reg *registry.Registry }

func (k kubeTails) LogTails(ctx context.Context, job string) ([]string, error) {
	return k.reg.Work().LogTails(ctx, job)
}

func (k kubeTails) LogTail(ctx context.Context, job, taskID string) ([]byte, error) {
	b, err := k.reg.Work().LogTail(ctx, job, taskID)
	if errors.Is(err, registry.ErrTailNotFound) {
		return nil, fmt.Errorf("%w: %s", kube.ErrNoTail, taskID)
	}
	return b, err
}

func (k kubeTails) WriteLogTails(ctx context.Context, writes []kube.TailWrite) error {
	ws := make([]registry.TailWrite, len(writes))
	for i, w := range writes {
		ws[i] = registry.TailWrite(w)
	}
	return k.reg.Work().WriteLogTails(ctx, ws)
}

// chooseEngine builds the engine of the settings; reg is this instance's registry, ms the
// Mesos masters (unused on Kubernetes), connect reaches the Kubernetes API.
func chooseEngine(cfg config.Config, reg *registry.Registry, ms *masters, connect func(kube.Connection) (kube.Clients, error),
	log *slog.Logger) (*engines, error) {
	name := cfg.ClusterList()[0].Name
	if cfg.KubeEnabled() {
		clients, err := connect(kube.Connection{Kubeconfig: cfg.Kube.Config, InCluster: cfg.Kube.InCluster,
			QPS: float32(cfg.Kube.APIQPS), Burst: cfg.Kube.APIBurst})
		if err != nil {
			return nil, err
		}
		auth := api.NewAuth(api.Credentials{AdminUser: cfg.AuthUsername, AdminPassword: cfg.AuthPassword,
			GuestUser: cfg.GuestUsername, GuestPassword: cfg.GuestPassword}, clock.Real{}, nil)
		kc, err := kube.NewCluster(kubeConfig(cfg, clients, auth.TaskToken), kubeTails{reg}, func(ctx context.Context) (string, error) {
			id, err := reg.Term().FrameworkID(ctx)
			return ownFrameworkID(id, name), err
		})
		if err != nil {
			return nil, err
		}
		return &engines{name: "kubernetes", reads: kc, kube: kc, kubes: clients, reportURLs: cfg.KubeSchedulerURLs(),
			rejectFileURLs: !cfg.AllowFileAppURLs,
			newTerm: func(reg *registry.Registry, frameworkID string, log *slog.Logger) (termEngine, error) {
				return kc.NewTerm(kubeTails{reg}, ownFrameworkID(frameworkID, name), log)
			}}, nil
	}
	exe, err := executorDelivery(cfg, log)
	if err != nil {
		return nil, err
	}
	reads := &agents.Engine{Client: ms.agentsClient(cfg), URL: ms.url, Embedded: cfg.MesosURL == "", Checkpoint: cfg.Mesos.Checkpoint,
		ExecutorApp: func(ctx context.Context, job string) (string, bool) {
			j, err := reg.Config().Job(ctx, job)
			return j.ExecutorApp(), err == nil
		}}
	return &engines{name: "mesos", reads: reads, exe: exe, reportURLs: []string{cfg.Advertised()},
		rejectFileURLs: cfg.RemoteAgents() && !cfg.AllowFileAppURLs,
		newTerm: func(_ *registry.Registry, frameworkID string, log *slog.Logger) (termEngine, error) {
			return mesosTerm{newMesosClient(cfg, ms, ownFrameworkID(frameworkID, name), log), reads}, nil
		}}, nil
}

// ownFrameworkID is the cluster's own framework id in one the registry kept: several
// clusters composed keep theirs together ("name=id,…", clusters.FrameworkIDs), and when the
// list shrinks to one (the last step of leaving Mesos) that cluster must subscribe with its
// own id, or its master knows none of its running tasks and every one runs again.
func ownFrameworkID(id, cluster string) string {
	if !strings.Contains(id, "=") {
		return id
	}
	return clusters.FrameworkIDs(id, cluster)[cluster]
}

// buildEngines builds the engine of the settings: the one cluster's (mesos_url, kube_config,
// or the embedded engine at masterURL), or several clusters composed (clusters_file).
func buildEngines(cfg config.Config, reg *registry.Registry, masterURL string, log *slog.Logger) (*engines, func(), error) {
	if len(cfg.ClusterList()) > 1 {
		return composeEngines(cfg, reg, masterURL, kube.Connect, log)
	}
	ms, err := newMasters(masterURL, log)
	if err != nil {
		return nil, nil, err
	}
	eng, err := chooseEngine(cfg, reg, ms, kube.Connect, log)
	if err != nil {
		ms.close()
		return nil, nil, err
	}
	return eng, ms.close, nil
}

// launchURL is the launcher's one rewrite of an app's URL (packages.LaunchURL): a hosted
// package is fetched from this instance (resolve), on Kubernetes at the address the pods
// reach the schedulers at.
func launchURL(cfg config.Config, resolve func(string) string) func(string) string {
	if cfg.KubeEnabled() {
		return packages.LaunchURL(resolve, cfg.Advertised(), cfg.KubeSchedulerURLs()[0])
	}
	return packages.LaunchURL(resolve, "", "")
}

// mesosTerm is a term's Mesos client with the master's agent list as its inventory.
type mesosTerm struct {
	*mesos.Client
	engine.Inventory
}

func (m mesosTerm) Run(ctx context.Context, h engine.Handler) error { return m.Client.Run(ctx, h) }

// apiEngine hands the API what only the Kubernetes engine offers: the executors' reports,
// podTemplate checks, and each namespace's Kubernetes namespace and quota.
func (e *engines) apiEngine(o *api.Options) {
	o.Apps.RejectFileAppURLs = e.rejectFileURLs
	if e.kube == nil {
		return
	}
	o.Operate.Executors, o.Apps.PodTemplates, o.Tenancy.EngineCaps = e.kube, e.kube, func(ns string) *api.EngineCap {
		kns, c, ok := e.kube.NamespaceCap(ns)
		out := &api.EngineCap{KubernetesNamespace: kns, Closed: c.Closed}
		if ok && c.Capped {
			out.Quota, out.QuotaName = &namespace.Resources{CPUCount: c.CPUs, MemoryMB: c.MemMB}, c.Name
		}
		return out
	}
}

// kubeConfig is the Kubernetes engine's configuration from the settings.
func kubeConfig(cfg config.Config, clients kube.Clients, taskToken func(string) string) kube.Config {
	var tols []corev1.Toleration
	for _, t := range cfg.Kube.TolerationList() {
		tol := corev1.Toleration{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), Operator: corev1.TolerationOpEqual}
		if t.Value == "" {
			tol.Operator = corev1.TolerationOpExists
		}
		tols = append(tols, tol)
	}
	urls := cfg.KubeSchedulerURLs()
	return kube.Config{
		Client: clients.Typed, Namespace: cfg.Kube.Namespace, NamespaceOf: cfg.Kube.KubeNamespaceOf,
		WatchNamespaces: cfg.Kube.KubeNamespacesKnown(), ExecutorImage: cfg.Kube.ExecutorImage,
		PullPolicy: corev1.PullPolicy(cfg.Kube.ImagePullPolicy), HostNetwork: cfg.Kube.HostNetwork, TemplateHostAccess: cfg.Kube.TemplateHostAccess,
		NodeSelector: cfg.Kube.NodeSelectorMap(), Tolerations: tols, ServiceAccount: cfg.Kube.ServiceAccount, SchedulerAccount: clients.Account, Binding: cfg.Kube.Binding,
		FinishedPodHold: cfg.Kube.FinishedPodHold,
		SchedulerURLs:   urls, TaskToken: taskToken, APIQPS: cfg.Kube.APIQPS,
	}
}
