package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/ejcloud/elasticjob/engine"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos/agents"
	"github.com/ejcloud/elasticjob/mesos/detector"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
)

// ops implements api.Operations: leader operations on the term in force,
// reads of agents on any instance.
type ops struct {
	work     *leaderWork
	lead     leadership
	reg      *registry.Registry
	agents   *agents.Client
	mesosURL string
	embedded bool
	hostname string

	capMu    sync.Mutex
	capacity api.Capacity
	capAt    time.Time
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

func (o *ops) Sandboxes(ctx context.Context, appName string) ([]api.Sandbox, error) {
	all, err := o.agents.Agents(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.Sandbox
	for _, a := range all {
		execs, err := o.agents.Executors(ctx, a.ID, jobs.ExecutorID(appName, ""))
		if err != nil {
			return nil, err
		}
		for _, e := range execs {
			if !e.Completed {
				out = append(out, api.Sandbox{Hostname: e.Hostname, AgentID: e.AgentID, ExecutorID: e.ID, Path: e.Directory})
			}
		}
	}
	return out, nil
}

// TaskLog finds the task's executor sandbox from the task id (it names the
// agent; the job names the app) and reads tasks/{taskId}/{stream} there.
func (o *ops) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (api.LogChunk, error) {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return api.LogChunk{}, fmt.Errorf("%w: %v", api.ErrBadRequest, err)
	}
	prefix := ""
	if job, err := o.reg.Job(ctx, tid.JobName); err == nil {
		prefix = jobs.ExecutorID(job.ExecutorApp(), tid.AgentID)
	}
	execs, err := o.agents.Executors(ctx, tid.AgentID, prefix)
	if err != nil {
		return api.LogChunk{}, notFound(err)
	}
	for i := len(execs) - 1; i >= 0; i-- { // newest runs last
		p := path.Join(execs[i].Directory, "tasks", taskID, stream)
		data, start, size, err := o.agents.Read(ctx, tid.AgentID, p, offset, length)
		if errors.Is(err, agents.ErrNotFound) {
			continue
		}
		if err != nil {
			return api.LogChunk{}, err
		}
		return api.LogChunk{TaskID: taskID, Stream: stream, Offset: start, Size: size, Data: data}, nil
	}
	return api.LogChunk{}, fmt.Errorf("%w: no %s for task %s on agent %s (the sandbox may have been removed)", api.ErrNotFound, stream, taskID, tid.AgentID)
}

func notFound(err error) error {
	if errors.Is(err, agents.ErrNotFound) {
		return fmt.Errorf("%w: %v", api.ErrNotFound, err)
	}
	return err
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

// Cluster describes the instances (leader first), the Mesos master and its
// agents. The agents are read through the master; if it cannot be reached
// the rest is still answered, with the error.
func (o *ops) Cluster(ctx context.Context) (any, error) {
	self := o.lead.Self()
	members, err := o.lead.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list the scheduler instances: %v", api.ErrUnavailable, err)
	}
	var leader any // null while no leader is known
	standbys := []instanceView{}
	lm, hasLeader := o.lead.Leader()
	for _, m := range members {
		v := viewOf(m, self.ID)
		if hasLeader && m.ID == lm.ID && leader == nil {
			leader = v
			continue
		}
		standbys = append(standbys, v)
	}
	role := "standby"
	if o.lead.Current() != nil {
		role = "leader"
	}
	mode := "cluster"
	if _, solo := o.lead.(*election.Solo); solo {
		mode = "embedded"
	}
	out := map[string]any{
		"mode": mode, "self": viewOf(self, self.ID), "role": role,
		"leader": leader, "standbys": standbys,
		"mesos": map[string]any{"url": o.mesosURL, "embedded": o.embedded, "master": detector.Redact(o.agents.Leader())},
	}
	ags, err := o.agents.Agents(ctx)
	if err != nil {
		out["agents"], out["agentsError"] = []agents.Agent{}, err.Error()
	} else {
		o.agents.FillIsolation(ctx, ags) // how each agent enforces resources (cgroups, or not)
		out["agents"] = ags
	}
	return out, nil
}

// capacityTTL is how long the agents' capacity read from the master is
// reused (registrations come in bursts; agents come and go slowly).
const capacityTTL = 5 * time.Second

// Capacity sums the agents' total resources as the master lists them.
func (o *ops) Capacity(ctx context.Context) (api.Capacity, error) {
	o.capMu.Lock()
	defer o.capMu.Unlock()
	if !o.capAt.IsZero() && time.Since(o.capAt) < capacityTTL {
		return o.capacity, nil
	}
	c, err := o.readCapacity(ctx)
	if err != nil {
		return api.Capacity{}, err
	}
	o.capacity, o.capAt = c, time.Now()
	return c, nil
}

func (o *ops) readCapacity(ctx context.Context) (api.Capacity, error) {
	ags, err := o.agents.Agents(ctx)
	if err != nil {
		return api.Capacity{}, err
	}
	var c api.Capacity
	for _, a := range ags {
		if !a.Active {
			continue
		}
		cpus, mem := number(a.Resources["cpus"]), number(a.Resources["mem"])
		c.Each = append(c.Each, engine.Agent{ID: a.ID, Hostname: a.Hostname, CPUs: cpus, MemMB: mem})
		c.Agents++
		c.TotalCPUs, c.TotalMem = c.TotalCPUs+cpus, c.TotalMem+mem
		c.LargestCPUs, c.LargestMem = max(c.LargestCPUs, cpus), max(c.LargestMem, mem)
	}
	return c, nil
}

func number(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return 0
}
