package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/scheduler"
)

// ops implements api.Operations: leader operations on the term in force, and the cluster
// page (the instances and the engine's view). The API reads the engine itself through
// api.Engine (the engine's own interfaces), wired in run.go.
type ops struct {
	work *leaderWork
	lead leadership
	eng  engineReads
}

var _ api.Operations = (*ops)(nil)

func (o *ops) Wake() {
	if s := o.work.scheduler(); s != nil {
		s.Wake()
	}
}

func (o *ops) Reconcile(ctx context.Context, explicit bool) error {
	s := o.work.scheduler()
	if s == nil {
		return fmt.Errorf("%w: this scheduler is not the leader", api.ErrUnavailable)
	}
	return s.Reconcile(ctx, explicit)
}

func (o *ops) KillRun(ctx context.Context, job, by string) (api.KilledRun, error) {
	s := o.work.scheduler()
	if s == nil {
		return api.KilledRun{}, fmt.Errorf("%w: this scheduler is not the leader", api.ErrUnavailable)
	}
	k, err := s.KillRun(ctx, job, by)
	switch {
	case errors.Is(err, scheduler.ErrNoRun):
		return api.KilledRun{}, fmt.Errorf("%w: %s", api.ErrConflict, strings.TrimPrefix(err.Error(), scheduler.ErrNoRun.Error()+": "))
	case errors.Is(err, scheduler.ErrDaemonRunKill):
		return api.KilledRun{}, fmt.Errorf("%w: %s", api.ErrBadRequest, strings.TrimPrefix(err.Error(), scheduler.ErrDaemonRunKill.Error()+": "))
	}
	return api.KilledRun{Tasks: k.Tasks, Dropped: k.Dropped}, err
}

// instanceView is one scheduler instance in GET /api/operate/cluster.
type instanceView struct {
	ID       string `json:"id"`
	URL      string `json:"url"`
	Hostname string `json:"hostname"`
	Started  string `json:"started"`
	Self     bool   `json:"self"`
}

func viewOf(m election.Member, self string) instanceView {
	return instanceView{ID: m.ID, URL: m.URL, Hostname: m.Hostname, Started: m.Started.UTC().Format("2006-01-02T15:04:05Z"), Self: m.ID == self}
}

// clusterPage is GET /api/operate/cluster: the instances (leader first), and the engine's
// part under its name ("mesos": the master; "kubernetes": the nodes), its agents and what
// it can do.
type clusterPage struct {
	Mode        string         `json:"mode"` // "embedded" (leader of one) or "cluster"
	Self        instanceView   `json:"self"`
	Role        string         `json:"role"`
	Leader      *instanceView  `json:"leader"` // null while no leader is known
	Standbys    []instanceView `json:"standbys"`
	Engine      engineInfo     `json:"engine"`
	Agents      any            `json:"agents"`
	AgentsError string         `json:"agentsError,omitempty"`
	// TenantIsolation keeps the namespaces' tasks apart (tenancy.go).
	TenantIsolation *api.TenantIsolation `json:"tenantIsolation,omitempty"`
	detail          engine.View
}

type engineInfo struct {
	Name         string              `json:"name"`
	Capabilities engine.Capabilities `json:"capabilities"`
}

// MarshalJSON adds the engine's own part under its name.
func (p clusterPage) MarshalJSON() ([]byte, error) {
	type plain clusterPage
	b, err := json.Marshal(plain(p))
	if err != nil || p.detail.Name == "" {
		return b, err
	}
	name, err := json.Marshal(p.detail.Name)
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(p.detail.Detail)
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], ',')
	out = append(append(append(out, name...), ':'), d...)
	return append(out, '}'), nil
}

// Cluster describes the instances and the engine. When the engine's agents cannot be read
// the rest is still answered, with the error.
func (o *ops) Cluster(ctx context.Context) (any, error) {
	self := o.lead.Self()
	members, err := o.lead.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list the scheduler instances: %v", api.ErrUnavailable, err)
	}
	p := clusterPage{Mode: "cluster", Self: viewOf(self, self.ID), Role: "standby", Standbys: []instanceView{}}
	lm, hasLeader := o.lead.Leader()
	for _, m := range members {
		v := viewOf(m, self.ID)
		if hasLeader && m.ID == lm.ID && p.Leader == nil {
			p.Leader = &v
			continue
		}
		p.Standbys = append(p.Standbys, v)
	}
	if o.lead.Current() != nil {
		p.Role = "leader"
	}
	if _, solo := o.lead.(*election.Solo); solo {
		p.Mode = "embedded"
	}
	v := o.eng.ClusterView(ctx)
	p.detail, p.Agents, p.AgentsError = v, v.Agents, v.AgentsError
	if p.Agents == nil {
		p.Agents = []any{}
	}
	p.Engine = engineInfo{Name: v.Name, Capabilities: o.eng.Capabilities()}
	if o.work != nil {
		p.TenantIsolation = &o.work.tenancy
	}
	return p, nil
}

// idleExecutors is namespace ns's idle executors as the leader's loop
// knows them (ok false: this instance does not lead, or its loop did not
// answer within 2 s).
func idleExecutors(ctx context.Context, s *scheduler.Scheduler, ns string) ([]api.IdleExecutor, bool) {
	if s == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	idle, err := s.IdleExecutors(ctx, ns)
	if err != nil {
		return nil, false
	}
	out := make([]api.IdleExecutor, len(idle))
	for i, e := range idle {
		out[i] = api.IdleExecutor{App: e.App, AgentID: e.AgentID, CPUCount: e.CPUs, MemoryMB: e.MemMB}
	}
	return out, true
}
