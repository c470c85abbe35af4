package clusters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
)

// Term is one cluster's engine for a leader term: its driver, its inventory, and Run,
// which feeds a handler until the term ends (mesos.Client, kube.Engine).
type Term interface {
	engine.Driver
	engine.Inventory
	Run(ctx context.Context, h engine.Handler) error
}

// Member is one named cluster of the composition.
type Member struct {
	Name string
	Term Term
}

// Engine is several clusters' engines composed into one Term.
type Engine struct {
	log     *slog.Logger
	clock   clock.Clock
	members []*member
	byName  map[string]*member

	mu     sync.Mutex
	offers map[string]*member // qualified offer id → its cluster, while outstanding
	tasks  map[string]placed  // task id → where it was launched or last heard of, until it ends
	out    *serial            // the scheduler's handler while Run runs (nil before)
}

// placed is the cluster a task runs on, and its agent (qualified) as last heard.
type placed struct {
	m     *member
	agent string
}

var _ Term = (*Engine)(nil)

// member is one cluster and what the composition knows of its connection.
type member struct {
	Member
	connected   bool
	frameworkID string
	lastErr     string
	since       time.Time // of the last change of connected
}

// New composes members, the first of which is the home cluster (it answers for ids that
// name no cluster). Names must be distinct cluster names (engine.CheckClusterName).
func New(members []Member, clk clock.Clock, log *slog.Logger) (*Engine, error) {
	if len(members) == 0 {
		return nil, errors.New("clusters: no cluster")
	}
	e := &Engine{log: log, clock: clk, byName: map[string]*member{}, offers: map[string]*member{}, tasks: map[string]placed{}}
	for _, m := range members {
		if err := engine.CheckClusterName(m.Name); err != nil {
			return nil, fmt.Errorf("clusters: %w", err)
		}
		if e.byName[m.Name] != nil {
			return nil, fmt.Errorf("clusters: cluster %q listed twice", m.Name)
		}
		if m.Term == nil {
			return nil, fmt.Errorf("clusters: cluster %q has no engine", m.Name)
		}
		mb := &member{Member: m}
		e.members = append(e.members, mb)
		e.byName[m.Name] = mb
	}
	return e, nil
}

// Names are the clusters' names, the home cluster first.
func (e *Engine) Names() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.Name
	}
	return out
}

// route is the cluster an id names (an agent's or an offer's), with the id as that
// cluster knows it: an id naming no cluster is the home cluster's.
func (e *Engine) route(id string) (*member, string, error) {
	c, local := engine.SplitID(id)
	if c == "" {
		return e.members[0], id, nil
	}
	m := e.byName[c]
	if m == nil {
		return nil, "", fmt.Errorf("clusters: %q names cluster %q, which is not configured: %w", id, c, engine.ErrNotFound)
	}
	return m, local, nil
}

// routeTask is the cluster of a task: its agent's when the caller knows it, else the one it
// was launched on by this engine, else the home cluster.
func (e *Engine) routeTask(taskID, agentID string) (*member, string, error) {
	if agentID != "" {
		return e.route(agentID)
	}
	e.mu.Lock()
	m := e.tasks[taskID].m
	e.mu.Unlock()
	if m == nil {
		m = e.members[0]
	}
	return m, "", nil
}

// FrameworkIDs splits the framework id the scheduler persists for a composed engine into
// each cluster's ("name=id,name=id"); an id in the older, single-engine form is the home
// cluster's (home).
func FrameworkIDs(id, home string) map[string]string {
	out := map[string]string{}
	if id == "" {
		return out
	}
	if !strings.Contains(id, "=") {
		out[home] = id
		return out
	}
	for _, p := range strings.Split(id, ",") {
		if k, v, ok := strings.Cut(p, "="); ok && k != "" && v != "" {
			out[k] = v
		}
	}
	return out
}

// frameworkID joins the members' framework ids as FrameworkIDs reads them, in the
// members' order, so the same ids give the same string.
func (e *Engine) frameworkID() string {
	var parts []string
	for _, m := range e.members {
		if m.frameworkID != "" {
			parts = append(parts, m.Name+"="+m.frameworkID)
		}
	}
	return strings.Join(parts, ",")
}

// Health is one cluster's connection as the composition last saw it.
type Health struct {
	Name      string    `json:"name"`
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since,omitzero"`
	LastError string    `json:"lastError,omitempty"`
}

// Health reports every cluster's connection, the home cluster first.
func (e *Engine) Health() []Health {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Health, 0, len(e.members))
	for _, m := range e.members {
		out = append(out, Health{Name: m.Name, Connected: m.connected, Since: m.since, LastError: m.lastErr})
	}
	return out
}

// Agents lists every reachable cluster's agents, their ids qualified; a cluster whose
// inventory cannot be read is left out (its agents vanish from the round's view), and
// only when none can be read is the answer an error.
func (e *Engine) Agents(ctx context.Context) ([]engine.Agent, error) {
	names := make([]string, len(e.members))
	invs := make([]engine.Inventory, len(e.members))
	for i, m := range e.members {
		names[i], invs[i] = m.Name, m.Term
	}
	return AgentsOf(ctx, names, invs, func(name string, err error) {
		e.log.Warn("a cluster's agents could not be read; they are left out", "cluster", name, "err", err)
	})
}

// AgentsOf reads each named cluster's inventory, its agents' ids qualified with the name,
// sorted by id. A cluster that cannot be read is left out (lost hears why); only when none
// can be read is the answer an error.
func AgentsOf(ctx context.Context, names []string, invs []engine.Inventory, lost func(name string, err error)) ([]engine.Agent, error) {
	var out []engine.Agent
	var errs []error
	for i, inv := range invs {
		as, err := inv.Agents(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", names[i], err))
			if lost != nil {
				lost(names[i], err)
			}
			continue
		}
		for _, a := range as {
			a.ID = engine.QualifyID(names[i], a.ID)
			out = append(out, a)
		}
	}
	if len(errs) == len(invs) {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
