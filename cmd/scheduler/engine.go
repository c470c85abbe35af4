package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/kube"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
)

// clusterEngine is what a leader term runs its scheduler on: the Mesos client (embedded
// master or a real cluster) or the Kubernetes engine.
type clusterEngine interface {
	engine.Driver
	Run(ctx context.Context, h engine.AsyncHandler) error
}

// mesosEngine adapts the Mesos client.
type mesosEngine struct{ *mesos.Client }

func (m mesosEngine) Run(ctx context.Context, h engine.AsyncHandler) error {
	return m.Client.Run(ctx, h)
}

// newEngine builds the engine of one term: Kubernetes with kube_config or kube_in_cluster,
// else Mesos.
func (l *leaderWork) newEngine(reg *registry.Registry, frameworkID string, log *slog.Logger) (clusterEngine, error) {
	if l.kube == nil {
		return mesosEngine{newMesosClient(l.cfg, l.masters, frameworkID, log)}, nil
	}
	return l.kube.newEngine(reg, frameworkID, log)
}

// kubeEngines is the process's Kubernetes side: the client every instance uses (logs,
// nodes) and the leader's engine of the term in force.
type kubeEngines struct {
	cfg     config.Config
	client  kubernetes.Interface
	dyn     dynamic.Interface // the definitions' objects (crds.go)
	auth    *api.Auth         // signs the tasks' report tokens
	current atomic.Pointer[kube.Engine]
	reg     *registry.Registry // this instance's (reads of kept log tails)

	checkOnce sync.Once
	checker   *kube.Engine // builds the pods the podTemplate checks dry-run
	checkErr  error
}

// newKube connects to the Kubernetes API of kube_config or kube_in_cluster (nil, nil
// without either).
func newKube(cfg config.Config, reg *registry.Registry) (*kubeEngines, error) {
	if !cfg.KubeEnabled() {
		return nil, nil
	}
	var rc *rest.Config
	var err error
	if cfg.Kube.InCluster {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kube.Config)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	rc.UserAgent = "elasticjob-scheduler"
	// Protobuf for the built-in types: the informers decode every pod of the cluster.
	rc.ContentType, rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"
	// No gzip: the API server otherwise compresses the watch streams event by event, and
	// inflating them was the largest part of the informers' CPU (docs/benchmarks.md).
	rc.DisableCompression = true
	rc.QPS, rc.Burst = float32(cfg.Kube.APIQPS), cfg.Kube.APIBurst
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	auth := api.NewAuth(api.Credentials{AdminUser: cfg.AuthUsername, AdminPassword: cfg.AuthPassword,
		GuestUser: cfg.GuestUsername, GuestPassword: cfg.GuestPassword}, clock.Real{}, nil)
	return &kubeEngines{cfg: cfg, client: cs, dyn: dyn, auth: auth, reg: reg}, nil
}

func (k *kubeEngines) newEngine(reg *registry.Registry, frameworkID string, log *slog.Logger) (clusterEngine, error) {
	e, err := kube.New(k.engineConfig(reg, frameworkID, log))
	if err != nil {
		return nil, err
	}
	return &termEngine{Engine: e, k: k}, nil
}

// engineConfig is the Kubernetes engine's configuration from the settings.
func (k *kubeEngines) engineConfig(reg *registry.Registry, frameworkID string, log *slog.Logger) kube.Config {
	cfg := k.cfg
	var tols []corev1.Toleration
	for _, t := range cfg.Kube.TolerationList() {
		tol := corev1.Toleration{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), Operator: corev1.TolerationOpEqual}
		if t.Value == "" {
			tol.Operator = corev1.TolerationOpExists
		}
		tols = append(tols, tol)
	}
	urls := cfg.KubeSchedulerURLs()
	advertised := cfg.Advertised()
	return kube.Config{
		Client: k.client, Namespace: cfg.Kube.Namespace, NamespaceOf: cfg.Kube.KubeNamespaceOf,
		WatchNamespaces: cfg.Kube.KubeNamespacesKnown(), FrameworkID: frameworkID, ExecutorImage: cfg.Kube.ExecutorImage,
		PullPolicy: corev1.PullPolicy(cfg.Kube.ImagePullPolicy), HostNetwork: cfg.Kube.HostNetwork,
		NodeSelector: cfg.Kube.NodeSelectorMap(), Tolerations: tols, ServiceAccount: cfg.Kube.ServiceAccount, Binding: cfg.Kube.Binding,
		SchedulerURLs: urls, TaskToken: k.auth.TaskToken, Tails: &kube.Tails{Registry: reg}, Log: log,
		RewriteAppURL: func(u string) string { // hosted packages: at the address the pods reach
			if rest, ok := strings.CutPrefix(u, advertised+"/"); ok {
				return urls[0] + "/" + rest
			}
			return u
		},
	}
}

// Check validates podTemplates with a server-side dry run of the pod they make
// (api.PodTemplates), on an engine of its own that never runs.
func (k *kubeEngines) Check(ctx context.Context, ns string, a app.Config, j *jobs.Config) error {
	k.checkOnce.Do(func() {
		k.checker, k.checkErr = kube.New(k.engineConfig(k.reg, "dry-run", nil))
	})
	if k.checkErr != nil {
		return fmt.Errorf("%w: %v", api.ErrUnavailable, k.checkErr)
	}
	err := k.checker.DryRunPodIn(ctx, ns, a, j)
	switch {
	case errors.Is(err, kube.ErrPodTemplate):
		return fmt.Errorf("%w: %v", api.ErrBadRequest, strings.TrimPrefix(err.Error(), kube.ErrPodTemplate.Error()+": "))
	case err != nil:
		return fmt.Errorf("%w: cannot check the podTemplate with the Kubernetes API server now; retry: %v", api.ErrUnavailable, err)
	}
	return nil
}

// termEngine is a term's Kubernetes engine, current while it runs.
type termEngine struct {
	*kube.Engine
	k *kubeEngines
}

func (t *termEngine) Run(ctx context.Context, h engine.AsyncHandler) error {
	t.k.current.Store(t.Engine)
	defer t.k.current.CompareAndSwap(t.Engine, nil)
	return t.Engine.Run(ctx, h)
}

// Report hands an executor's report to the engine of the term in force (api.Executors).
func (k *kubeEngines) Report(ctx context.Context, r engine.ExecutorReport) error {
	e := k.current.Load()
	if e == nil {
		return fmt.Errorf("%w: this scheduler is not leading on Kubernetes at the moment; retry", api.ErrUnavailable)
	}
	err := e.Report(ctx, r)
	switch {
	case errors.Is(err, kube.ErrBadReport):
		return fmt.Errorf("%w: %v", api.ErrBadRequest, err)
	case errors.Is(err, kube.ErrNotRunning):
		return fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	return err
}

// kubeOps is ops on Kubernetes: task logs from the pods (pods/log) while they run and from
// the kept tails after, the nodes for the cluster page and the registration fit check.
type kubeOps struct {
	*ops
	k *kubeEngines
}

func (o kubeOps) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (api.LogChunk, error) {
	kns := o.k.cfg.Kube.Namespace
	if tid, err := jobs.ParseTaskID(taskID); err == nil {
		if n, err := o.k.cfg.Kube.KubeNamespaceOf(namespace.Of(tid.JobName)); err == nil {
			kns = n
		}
	}
	c, err := kube.TaskLog(ctx, o.k.client, kns, &kube.Tails{Registry: o.k.reg}, taskID, stream, offset, length)
	switch {
	case errors.Is(err, kube.ErrNoTail):
		return api.LogChunk{}, fmt.Errorf("%w: %v", api.ErrNotFound, err)
	case err != nil:
		return api.LogChunk{}, err
	}
	return api.LogChunk{TaskID: taskID, Stream: stream, Offset: c.Offset, Size: c.Size, Data: c.Data}, nil
}

func (o kubeOps) Sandboxes(ctx context.Context, appName string) ([]api.Sandbox, error) {
	kns, err := o.k.cfg.Kube.KubeNamespaceOf(namespace.Of(appName)) // the app's key
	if err != nil {
		return nil, err
	}
	pods, err := kube.AppPods(ctx, o.k.client, kns, appName)
	if err != nil {
		return nil, err
	}
	out := []api.Sandbox{}
	for _, p := range pods {
		out = append(out, api.Sandbox{Hostname: p.Spec.NodeName, AgentID: p.Spec.NodeName, ExecutorID: p.Annotations[kube.AnnotationExec],
			Path: "pod " + p.Namespace + "/" + p.Name})
	}
	return out, nil
}

func (o kubeOps) Cluster(ctx context.Context) (any, error) {
	v, err := o.ops.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	delete(out, "mesos")
	delete(out, "agentsError")
	out["agents"] = []any{}
	kv := map[string]any{"namespace": o.k.cfg.Kube.Namespace}
	if nodes, err := o.nodes(ctx); err != nil {
		kv["nodes"], kv["error"] = []kube.NodeView{}, err.Error()
	} else {
		kv["nodes"] = nodes
	}
	out["kubernetes"] = kv
	return out, nil
}

// nodes are the leader engine's view, or on a standby one read from the API.
func (o kubeOps) nodes(ctx context.Context) ([]kube.NodeView, error) {
	if e := o.k.current.Load(); e != nil {
		return e.Nodes(), nil
	}
	fw, _ := o.reg.FrameworkID(ctx)
	return kube.Snapshot(ctx, o.k.client, o.k.cfg.Kube.Namespace, fw)
}

func (o kubeOps) Capacity(ctx context.Context) (api.Capacity, error) {
	nodes, err := o.nodes(ctx)
	if err != nil {
		return api.Capacity{}, err
	}
	var c api.Capacity
	for _, n := range nodes {
		if !n.Usable {
			continue
		}
		c.Agents++
		c.TotalCPUs, c.TotalMem = c.TotalCPUs+n.AllocatableCPUs, c.TotalMem+n.AllocatableMem
		c.LargestCPUs, c.LargestMem = max(c.LargestCPUs, n.AllocatableCPUs), max(c.LargestMem, n.AllocatableMem)
	}
	return c, nil
}

// clusterInventory lists an engine's agents with their totals: the Mesos master's agent
// list, or the Kubernetes engine's nodes.
type clusterInventory = engine.Inventory

// namespaceCap is what the leader's engine allows namespace ns (api.Options.EngineCaps): its
// Kubernetes namespace, and its ResourceQuota's cap or why it is closed (the quota is read by
// the leader; the usage route is served there).
func (k *kubeEngines) namespaceCap(ns string) *api.EngineCap {
	out := &api.EngineCap{}
	kns, err := k.cfg.Kube.KubeNamespaceOf(ns)
	if err != nil {
		out.Closed = err.Error()
		return out
	}
	out.KubernetesNamespace = kns
	e := k.current.Load()
	if e == nil {
		return out
	}
	if c, ok := e.NamespaceCaps([]string{ns})[ns]; ok {
		out.Closed = c.Closed
		if c.Capped {
			out.Quota, out.QuotaName = &namespace.Resources{CPUCount: c.CPUs, MemoryMB: c.MemMB}, c.Name
		}
	}
	return out
}
