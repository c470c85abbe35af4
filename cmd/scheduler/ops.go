package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos/agents"
	"github.com/ejcloud/elasticjob/scheduler"
)

// ops implements api.Operations over the scheduler and the agents.
type ops struct {
	sched    *scheduler.Scheduler
	agents   *agents.Client
	mesosURL string
	embedded bool
	hostname string
}

var _ api.Operations = (*ops)(nil)

func (o *ops) Wake() { o.sched.Wake() }

func (o *ops) Reconcile(ctx context.Context, explicit bool) error {
	return o.sched.Reconcile(ctx, explicit)
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
	if job, ok := o.sched.Catalog().Job(tid.JobName); ok {
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

func (o *ops) Cluster(ctx context.Context) (any, error) {
	ags, err := o.agents.Agents(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"leader":   map[string]any{"hostname": o.hostname, "self": true},
		"standbys": []any{},
		"mesos":    map[string]any{"url": o.mesosURL, "embedded": o.embedded},
		"agents":   ags,
	}, nil
}
