package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/clusters"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// clusterEngine is one configured cluster's engine, built from the scheduler's settings with
// that cluster's engine settings in place (config.ForCluster).
type clusterEngine struct {
	name string
	cfg  config.Config
	eng  *engines
	ms   *masters
}

// composeEngines builds one engine per cluster of clusters_file and composes them below the
// engine seam (engine/clusters): the leader's terms run the composition, the API reads each
// cluster through composedReads. embeddedURL is the embedded master's, when a cluster is the
// embedded engine. The returned close ends what the members opened (ZooKeeper detectors).
func composeEngines(cfg config.Config, reg *registry.Registry, embeddedURL string, connect func(kube.Connection) (kube.Clients, error),
	log *slog.Logger) (*engines, func(), error) {
	var members []clusterEngine
	closeAll := func() {
		for _, m := range members {
			m.ms.close()
		}
	}
	for _, cl := range cfg.ClusterList() {
		ccfg, err := cfg.ForCluster(cl)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clog := log.With("cluster", cl.Name)
		url := ccfg.MesosURL
		if cl.Engine == config.EngineEmbedded {
			url = embeddedURL
		}
		ms, err := newMasters(url, clog)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
		e, err := chooseEngine(ccfg, reg, ms, connect, clog)
		if err != nil {
			ms.close()
			closeAll()
			return nil, nil, fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
		members = append(members, clusterEngine{name: cl.Name, cfg: ccfg, eng: e, ms: ms})
	}
	home := members[0].eng
	out := &engines{name: "clusters", reads: composedReads(members), exe: home.exe, reportURLs: home.reportURLs,
		newTerm: func(reg *registry.Registry, frameworkID string, log *slog.Logger) (termEngine, error) {
			return composeTerm(members, reg, frameworkID, log)
		}}
	for _, m := range members {
		// One scheduler serves every Mesos cluster's executor from the same data_dir/artifacts;
		// any member's handler serves them all.
		if out.exe.artifacts == nil {
			out.exe.artifacts = m.eng.exe.artifacts
		}
		out.rejectFileURLs = out.rejectFileURLs || m.eng.rejectFileURLs
		if out.kube == nil && m.eng.kube != nil {
			out.kube, out.kubes = m.eng.kube, m.eng.kubes
		}
	}
	return out, closeAll, nil
}

// composeTerm builds each cluster's engine for a term, with its own framework id (the
// persisted id holds each cluster's: clusters.FrameworkIDs), and composes them.
func composeTerm(members []clusterEngine, reg *registry.Registry, frameworkID string, log *slog.Logger) (termEngine, error) {
	ids := clusters.FrameworkIDs(frameworkID, members[0].name)
	ms := make([]clusters.Member, 0, len(members))
	for _, m := range members {
		t, err := m.eng.newTerm(reg, ids[m.name], log.With("cluster", m.name))
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", m.name, err)
		}
		ms = append(ms, clusters.Member{Name: m.name, Term: memberTerm{Term: t, exe: m.eng.exe, urls: m.eng.reportURLs}})
	}
	return clusters.New(ms, clock.Real{}, log.With("subsystem", "clusters"))
}

// memberTerm is one cluster's engine in a composition: the launches the scheduler builds
// with the home cluster's executor delivery and report addresses get this cluster's, since
// a Mesos cluster of remote agents fetches the executor where the embedded agent runs it
// by path, and Kubernetes pods reach the schedulers at addresses of their own.
type memberTerm struct {
	clusters.Term
	exe  delivery
	urls []string
}

func (m memberTerm) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	own := make([]engine.TaskLaunch, len(launches))
	for i, l := range launches {
		if m.exe.command != "" {
			l.Executor.Command, l.Executor.URIs = m.exe.command, m.exe.uris
		}
		if l.Task.SecretAccess != nil && len(m.urls) > 0 {
			sa := *l.Task.SecretAccess
			sa.URLs = m.urls
			l.Task.SecretAccess = &sa
		}
		own[i] = l
	}
	return m.Term.Accept(ctx, offerIDs, own, refuse)
}

// composedReads is what the API reads of several clusters: each cluster's engine, its ids
// qualified with the cluster's name as the composition's are.
type composedReads []clusterEngine

var _ engineReads = composedReads(nil)
var _ engine.TaskFiles = composedReads(nil)

// Capabilities are what every cluster can do together, as the composition declares them.
func (c composedReads) Capabilities() engine.Capabilities {
	caps := make([]engine.Capabilities, len(c))
	for i, m := range c {
		caps[i] = m.eng.reads.Capabilities()
	}
	return clusters.Combined(caps...)
}

// TaskLog asks each cluster in turn: a task id names no cluster, and each engine answers
// only for tasks it ran (ErrNotFound otherwise).
func (c composedReads) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	var firstErr error
	for _, m := range c {
		chunk, err := m.eng.reads.TaskLog(ctx, taskID, stream, offset, length)
		if err == nil {
			return chunk, nil
		}
		if !errors.Is(err, engine.ErrNotFound) && firstErr == nil {
			firstErr = fmt.Errorf("cluster %s: %w", m.name, err)
		}
	}
	if firstErr != nil {
		return engine.LogChunk{}, firstErr
	}
	return engine.LogChunk{}, fmt.Errorf("task %s: no cluster has its log: %w", taskID, engine.ErrNotFound)
}

// TaskFiles lists a task's files on the cluster that ran it, as TaskLog finds it.
func (c composedReads) TaskFiles(ctx context.Context, taskID, dir string) ([]engine.TaskFile, error) {
	var firstErr error
	for _, m := range c {
		tf, ok := m.eng.reads.(engine.TaskFiles)
		if !ok {
			continue
		}
		files, err := tf.TaskFiles(ctx, taskID, dir)
		if err == nil {
			return files, nil
		}
		if !errors.Is(err, engine.ErrNotFound) && firstErr == nil {
			firstErr = fmt.Errorf("cluster %s: %w", m.name, err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, fmt.Errorf("task %s: no cluster has its files: %w", taskID, engine.ErrNotFound)
}

// Sandboxes lists an app's sandboxes on every cluster; a cluster that cannot answer is
// left out unless none can.
func (c composedReads) Sandboxes(ctx context.Context, app string) ([]engine.Sandbox, error) {
	var out []engine.Sandbox
	var errs []error
	for _, m := range c {
		sb, err := m.eng.reads.Sandboxes(ctx, app)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", m.name, err))
			continue
		}
		for _, s := range sb {
			s.AgentID = engine.QualifyID(m.name, s.AgentID)
			out = append(out, s)
		}
	}
	if len(errs) == len(c) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// clusterPart is one cluster in the cluster page's engine detail.
type clusterPart struct {
	Name        string `json:"name"`
	Engine      string `json:"engine"`
	Detail      any    `json:"detail,omitempty"`
	Agents      any    `json:"agents,omitempty"`
	AgentsError string `json:"agentsError,omitempty"`
}

// ClusterView is every cluster's view, in the configured order; the agents are the
// composition's (ids qualified), and an error names the clusters that could not answer.
func (c composedReads) ClusterView(ctx context.Context) engine.View {
	parts := make([]clusterPart, 0, len(c))
	var errs []string
	for _, m := range c {
		v := m.eng.reads.ClusterView(ctx)
		parts = append(parts, clusterPart{Name: m.name, Engine: v.Name, Detail: v.Detail, Agents: v.Agents, AgentsError: v.AgentsError})
		if v.AgentsError != "" {
			errs = append(errs, m.name+": "+v.AgentsError)
		}
	}
	out := engine.View{Name: "clusters", Detail: map[string]any{"clusters": parts}}
	agents, err := c.Agents(ctx)
	if err != nil {
		out.AgentsError = err.Error()
	} else {
		out.Agents = agents
	}
	if len(errs) > 0 && out.AgentsError == "" {
		out.AgentsError = fmt.Sprint(errs)
	}
	return out
}

// Agents lists every reachable cluster's agents, their ids qualified.
func (c composedReads) Agents(ctx context.Context) ([]engine.Agent, error) {
	names := make([]string, len(c))
	invs := make([]engine.Inventory, len(c))
	for i, m := range c {
		names[i], invs[i] = m.name, m.eng.reads
	}
	return clusters.AgentsOf(ctx, names, invs, nil)
}

// clusterStates tells the launch round which clusters there are and which are drained: the
// configured list, the drain marks read from the registry every round (so a drain made
// through any replica's API holds at once). A mark that cannot be read leaves the round
// with the marks it read last.
type clusterStates struct {
	names []string
	reg   *registry.Registry
	log   *slog.Logger
	last  map[string]registry.Drain
}

func (c *clusterStates) Clusters(ctx context.Context) []round.ClusterState {
	d, err := c.reg.Clusters().Drained(ctx)
	if err != nil {
		c.log.Warn("the drained clusters could not be read; the last marks read hold", "err", err)
		d = c.last
	} else {
		c.last = d
	}
	out := make([]round.ClusterState, len(c.names))
	for i, n := range c.names {
		_, drained := d[n]
		out[i] = round.ClusterState{Name: n, Drained: drained}
	}
	return out
}

// clusterConfigs are the clusters as the API lists them, the home one first.
func clusterConfigs(cfg config.Config) []api.ClusterConfig {
	var out []api.ClusterConfig
	for _, cl := range cfg.ClusterList() {
		out = append(out, api.ClusterConfig{Name: cl.Name, Engine: cl.Engine})
	}
	return out
}
