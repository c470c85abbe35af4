package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// Cluster is the Kubernetes engine for the whole scheduler process, leading or not: it
// builds each leader term's Engine and keeps the one in force, and it answers what the API
// asks of the engine on any instance: task logs (pods/log while a pod runs, the kept tails
// after), an app's sandboxes (its pods), the nodes for the cluster page and the
// registration fit check, the executors' reports (to the leader's engine), podTemplate
// checks and each namespace's Kubernetes namespace and quota.
type Cluster struct {
	cfg   Config // every term's, but FrameworkID, Tails and Log
	tails *Tails // this instance's reads of the kept tails
	// frameworkID reads the framework id kept in the registry: a standby's view of the pods.
	frameworkID func(ctx context.Context) (string, error)
	current     atomic.Pointer[Engine]

	checkOnce sync.Once
	checker   *Engine // builds the pods the podTemplate checks dry-run; never runs
	checkErr  error
}

var (
	_ engine.Declarer    = (*Cluster)(nil)
	_ engine.Logs        = (*Cluster)(nil)
	_ engine.Sandboxes   = (*Cluster)(nil)
	_ engine.ClusterView = (*Cluster)(nil)
	_ engine.Inventory   = (*Cluster)(nil)
)

// NewCluster checks cfg (as New does) and returns the process's Kubernetes engine; tails
// are this instance's kept log tails and frameworkID reads the framework id the registry
// keeps (both the wiring's, over this instance's registry).
func NewCluster(cfg Config, tails TailStore, frameworkID func(context.Context) (string, error)) (*Cluster, error) {
	cfg.FrameworkID, cfg.Log, cfg.Tails = "check", nil, nil
	if _, err := New(cfg); err != nil {
		return nil, err
	}
	return &Cluster{cfg: cfg, tails: &Tails{Store: tails}, frameworkID: frameworkID}, nil
}

// Capabilities is what the Kubernetes engine declares: tasks survive a scheduler restart
// (their pods run on; a new term finds them by their framework label); every task's pod runs
// an executor of its own, sized into the pod, that ends with the task (no executor sharing);
// logs, sandboxes (pods), the nodes and their capacity can be read; a round's Accepts go
// acceptsInFlight at a time.
func Capabilities() engine.Capabilities {
	return engine.Capabilities{Checkpointing: true, Logs: true, Sandboxes: true, ClusterView: true, Capacity: true, Accepts: acceptsInFlight}
}

// acceptsInFlight is how many Accepts (each one node's pods) a round has in flight
// together. Accept is safe so: it takes the node's offer and records its tasks under the
// engine's lock (prepare: a second Accept of the same offer finds it gone), creates the
// pods outside it, and settles only its own launches' tasks under it again (created); the
// launcher sends one Accept per node. An Accept lasts about one create's round trip (a
// node's few pods go together), so Accepts in flight ÷ that latency bound the pods created
// per second: a round beside other clusters spreads its pods thinly (a pod or two a node),
// so a few Accepts in flight leave the client far below its rate. 12 Accepts of
// createWorkers creations each stay below the client's default burst (kube_api_burst 100),
// past which more would only queue creations in its rate limiter.
const acceptsInFlight = 12

// Capabilities is the Kubernetes engine's (Capabilities).
func (c *Cluster) Capabilities() engine.Capabilities { return Capabilities() }

// Term is one leader term's engine: current for the API while it runs.
type Term struct {
	*Engine
	c *Cluster
}

// NewTerm builds the engine of a leader term; tails are kept in the term's fenced registry.
func (c *Cluster) NewTerm(tails TailStore, frameworkID string, log *slog.Logger) (*Term, error) {
	cfg := c.cfg
	cfg.FrameworkID, cfg.Tails, cfg.Log = frameworkID, &Tails{Store: tails}, log
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Term{Engine: e, c: c}, nil
}

// Run runs the term's engine (Engine.Run), current while it runs.
func (t *Term) Run(ctx context.Context, h engine.Handler) error {
	t.c.current.Store(t.Engine)
	defer t.c.current.CompareAndSwap(t.Engine, nil)
	return t.Engine.Run(ctx, h)
}

// Report hands an executor's report to the engine of the term in force: ErrUnavailable on
// an instance not leading now, ErrInvalid for a report that names no task or no state.
func (c *Cluster) Report(ctx context.Context, r engine.ExecutorReport) error {
	e := c.current.Load()
	if e == nil {
		return fmt.Errorf("%w: this scheduler is not leading on Kubernetes at the moment; retry", engine.ErrUnavailable)
	}
	err := e.Report(ctx, r)
	switch {
	case errors.Is(err, ErrBadReport):
		return fmt.Errorf("%w: %v", engine.ErrInvalid, err)
	case errors.Is(err, ErrNotRunning):
		return fmt.Errorf("%w: %v", engine.ErrUnavailable, err)
	}
	return err
}

// Check validates podTemplates with a server-side dry run of the pod they make, in the
// Kubernetes namespace of scheduler namespace ns: a bad template is ErrInvalid, an API
// server that cannot be asked ErrUnavailable.
func (c *Cluster) Check(ctx context.Context, ns string, a app.Config, j *jobs.Config) error {
	c.checkOnce.Do(func() {
		cfg := c.cfg
		cfg.FrameworkID = "dry-run"
		c.checker, c.checkErr = New(cfg)
	})
	if c.checkErr != nil {
		return fmt.Errorf("%w: %v", engine.ErrUnavailable, c.checkErr)
	}
	err := c.checker.DryRunPodIn(ctx, ns, a, j)
	switch {
	case errors.Is(err, ErrPodTemplate):
		return fmt.Errorf("%w: %s", engine.ErrInvalid, strings.TrimPrefix(err.Error(), ErrPodTemplate.Error()+": "))
	case err != nil:
		return fmt.Errorf("%w: cannot check the podTemplate with the Kubernetes API server now; retry: %v", engine.ErrUnavailable, err)
	}
	return nil
}

// namespaceOf is the Kubernetes namespace of scheduler namespace ns's pods.
func (c *Cluster) namespaceOf(ns string) (string, error) {
	if c.cfg.NamespaceOf == nil || ns == "" || ns == namespace.Default {
		return c.cfg.Namespace, nil
	}
	return c.cfg.NamespaceOf(ns)
}

// NamespaceCap is what the engine allows scheduler namespace ns: its Kubernetes namespace
// (kns; "" with cap.Closed saying why it has none), and, from the leader's engine, its
// ResourceQuotas' cap or why it is closed (ok false on a standby, or when none caps it).
func (c *Cluster) NamespaceCap(ns string) (kns string, cp engine.NamespaceCap, ok bool) {
	kns, err := c.namespaceOf(ns)
	if err != nil {
		return "", engine.NamespaceCap{Closed: err.Error()}, true
	}
	e := c.current.Load()
	if e == nil {
		return kns, engine.NamespaceCap{}, false
	}
	cp, ok = e.NamespaceCaps([]string{ns})[ns]
	return kns, cp, ok
}

// TaskLog reads a task's output from its pod's log while the pod exists, else from the tail
// kept when it ended (taskLog in logs.go).
func (c *Cluster) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return engine.LogChunk{}, fmt.Errorf("%w: %v", engine.ErrInvalid, err)
	}
	kns, err := c.namespaceOf(namespace.Of(tid.JobName))
	if err != nil {
		kns = c.cfg.Namespace
	}
	ch, err := taskLog(ctx, c.cfg.Client, kns, c.tails, taskID, stream, offset, length)
	switch {
	case errors.Is(err, ErrNoTail):
		return engine.LogChunk{}, fmt.Errorf("%w: %v", engine.ErrNotFound, err)
	case err != nil:
		return engine.LogChunk{}, err
	}
	return ch, nil
}

// Sandboxes lists the app's pods: each one is a sandbox (node, executor id, pod name).
func (c *Cluster) Sandboxes(ctx context.Context, appName string) ([]engine.Sandbox, error) {
	kns, err := c.namespaceOf(namespace.Of(appName)) // the app's key
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNotFound, err)
	}
	pods, err := appPods(ctx, c.cfg.Client, kns, appName)
	if err != nil {
		return nil, err
	}
	out := []engine.Sandbox{}
	for _, p := range pods {
		out = append(out, engine.Sandbox{Hostname: p.Spec.NodeName, AgentID: p.Spec.NodeName,
			ExecutorID: p.Annotations[AnnotationExec], Path: "pod " + p.Namespace + "/" + p.Name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// nodes are the leader engine's view, or on a standby one read from the API.
func (c *Cluster) nodes(ctx context.Context) ([]NodeView, error) {
	if e := c.current.Load(); e != nil {
		return e.Nodes(), nil
	}
	fw, _ := c.frameworkID(ctx)
	return snapshot(ctx, c.cfg.Client, c.cfg.Namespace, fw)
}

// Agents lists the usable nodes with their allocatable resources.
func (c *Cluster) Agents(ctx context.Context) ([]engine.Agent, error) {
	nodes, err := c.nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := []engine.Agent{}
	for _, n := range nodes {
		if n.Usable {
			out = append(out, engine.Agent{ID: n.Name, Hostname: n.Name, CPUs: n.AllocatableCPUs, MemMB: n.AllocatableMem})
		}
	}
	return out, nil
}

// ClusterInfo is the Kubernetes part of the cluster page.
type ClusterInfo struct {
	Namespace string     `json:"namespace"` // of the default namespace's pods
	Nodes     []NodeView `json:"nodes"`
	Error     string     `json:"error,omitempty"` // why the nodes could not be read
}

// ClusterView describes the nodes and this scheduler's pods on them (the agents of the page
// are empty: nodes are not Mesos agents).
func (c *Cluster) ClusterView(ctx context.Context) engine.View {
	info := ClusterInfo{Namespace: c.cfg.Namespace, Nodes: []NodeView{}}
	if nodes, err := c.nodes(ctx); err != nil {
		info.Error = err.Error()
	} else {
		info.Nodes = nodes
	}
	return engine.View{Name: "kubernetes", Detail: info, Agents: []any{}}
}
