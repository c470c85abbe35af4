package mesos

import (
	"fmt"
	"maps"
	"slices"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/engine"
)

// holdOffers keeps the raw offers for a later Accept and returns their summaries.
func (c *Client) holdOffers(raw []mesos.Offer) []engine.Offer {
	out := make([]engine.Offer, 0, len(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range raw {
		o := raw[i]
		c.offers[o.ID.Value] = &o
		out = append(out, c.summarize(&o))
	}
	return out
}

// dropOffers forgets offers (used, declined or rescinded).
func (c *Client) dropOffers(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.offers, id)
	}
}

// heldOffers returns the raw offers for ids, or ErrUnknownOffer.
func (c *Client) heldOffers(ids []string) ([]*mesos.Offer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*mesos.Offer, 0, len(ids))
	for _, id := range ids {
		o, ok := c.offers[id]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownOffer, id)
		}
		out = append(out, o)
	}
	return out, nil
}

// taskInfos builds the TaskInfos of launches, carving task resources out of the offers.
func (c *Client) taskInfos(frameworkID string, offers []*mesos.Offer, launches []engine.TaskLaunch) ([]mesos.TaskInfo, error) {
	p := c.newPool(offers)
	out := make([]mesos.TaskInfo, 0, len(launches))
	for _, l := range launches {
		ti, err := c.taskInfo(frameworkID, p, l)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", l.TaskID, err)
		}
		out = append(out, ti)
	}
	return out, nil
}

func (c *Client) taskInfo(frameworkID string, p *pool, l engine.TaskLaunch) (mesos.TaskInfo, error) {
	cpus, err := p.take(resCPUs, l.CPUs)
	if err != nil {
		return mesos.TaskInfo{}, err
	}
	mem, err := p.take(resMem, l.MemMB)
	if err != nil {
		return mesos.TaskInfo{}, err
	}
	ei, err := executorInfo(frameworkID, p, l.Executor)
	if err != nil {
		return mesos.TaskInfo{}, fmt.Errorf("executor %s: %w", l.Executor.ID, err)
	}
	ti := mesos.TaskInfo{
		Name:      l.Name,
		TaskID:    mesos.TaskID{Value: l.TaskID},
		AgentID:   mesos.AgentID{Value: l.AgentID},
		Resources: append(cpus, mem...),
		Executor:  ei,
		Data:      l.Task.Marshal(), // the executor's payload: encoded here, at the Mesos edge
	}
	if ti.Name == "" {
		ti.Name = l.TaskID
	}
	if l.KillGrace > 0 {
		ti.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: l.KillGrace.Nanoseconds()}}
	}
	return ti, nil
}

// executorInfo builds the CUSTOM ExecutorInfo of spec. It is a pure function of the spec,
// the framework id and the shape of the offer's resources, so every task of one executor
// carries an identical ExecutorInfo, as Mesos requires.
func executorInfo(frameworkID string, p *pool, spec engine.ExecutorSpec) (*mesos.ExecutorInfo, error) {
	cpus, err := p.template(resCPUs, spec.CPUs)
	if err != nil {
		return nil, err
	}
	mem, err := p.template(resMem, spec.MemMB)
	if err != nil {
		return nil, err
	}
	ei := &mesos.ExecutorInfo{
		Type:        mesos.ExecutorInfo_CUSTOM,
		ExecutorID:  mesos.ExecutorID{Value: spec.ID},
		FrameworkID: &mesos.FrameworkID{Value: frameworkID},
		Command:     commandInfo(spec),
		Resources:   append(cpus, mem...),
	}
	if spec.Name != "" {
		ei.Name = ptr(spec.Name)
	}
	return ei, nil
}

func commandInfo(spec engine.ExecutorSpec) *mesos.CommandInfo {
	ci := &mesos.CommandInfo{
		Value:     ptr(spec.Command),
		Shell:     ptr(spec.Shell),
		Arguments: spec.Args,
	}
	if spec.User != "" {
		ci.User = ptr(spec.User) // the agent runs the executor, and so its tasks, as this user
	}
	for _, u := range spec.URIs {
		ci.URIs = append(ci.URIs, mesos.CommandInfo_URI{
			Value:      u.Value,
			Executable: ptr(u.Executable),
			Extract:    ptr(u.Extract),
			Cache:      ptr(u.Cache),
		})
	}
	if len(spec.Env) > 0 {
		env := &mesos.Environment{}
		for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
			env.Variables = append(env.Variables, mesos.Environment_Variable{Name: k, Value: ptr(spec.Env[k])})
		}
		ci.Environment = env
	}
	return ci
}
