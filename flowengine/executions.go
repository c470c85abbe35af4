package flowengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// What the engine knows of node executions: how they ended (their
// records), whether they are still queued or running, and whether a job
// can take one.

// executions reads what is known of the run's RUNNING nodes: an ended
// execution from its record, and a lost one as the sweep found it (at once
// when the run is being cancelled: the engine dropped it itself).
func (e *Engine) executions(ctx context.Context, run workflow.Run) (map[string]workflow.Execution, error) {
	out := map[string]workflow.Execution{}
	var where *keySets
	for _, n := range run.Nodes {
		if n.State != workflow.NodeRunning {
			continue
		}
		rec, err := e.Registry.Work().RunRecordOf(ctx, n.RunKey)
		if err != nil && !errors.Is(err, registry.ErrRunNotFound) {
			return nil, err
		}
		if err == nil && rec.Done {
			out[n.ID] = workflow.Execution{Done: true, Success: rec.Success, Shards: shardsOf(rec)}
			continue
		}
		if why, ok := e.lost[n.RunKey]; ok {
			out[n.ID] = workflow.Execution{Lost: why}
			continue
		}
		if run.Cancel == nil {
			continue
		}
		if where == nil {
			if where, err = readKeySets(ctx, e.Registry); err != nil {
				return nil, err
			}
		}
		if where.pending[n.RunKey] || where.active[n.RunKey] {
			continue
		}
		// it may have ended between the two reads
		if rec, err := e.Registry.Work().RunRecordOf(ctx, n.RunKey); err == nil && rec.Done {
			out[n.ID] = workflow.Execution{Done: true, Success: rec.Success, Shards: shardsOf(rec)}
		} else {
			out[n.ID] = workflow.Execution{Lost: "its execution was dropped"}
		}
	}
	return out, nil
}

func shardsOf(rec task.RunRecord) []workflow.Shard {
	out := make([]workflow.Shard, 0, len(rec.Shards))
	for _, s := range rec.Shards {
		out = append(out, workflow.Shard{Item: s.Item, TaskID: s.TaskID, State: s.State, Message: s.Message,
			StartedAt: s.StartedAt, EndedAt: s.EndedAt, Outputs: s.Outputs})
	}
	return out
}

// keySets are the keys of pending executions and of running tasks and
// shards waiting for a retry or failover.
type keySets struct{ pending, active map[string]bool }

func readKeySets(ctx context.Context, reg *registry.Registry) (*keySets, error) {
	p, err := reg.Work().PendingKeys(ctx)
	if err != nil {
		return nil, err
	}
	a, err := reg.Work().ActiveKeys(ctx)
	if err != nil {
		return nil, err
	}
	return &keySets{p, a}, nil
}

// stepInput reads what workflow.Step decides on besides the run: how its
// running nodes' executions ended and, unless it is being cancelled, why
// the jobs of the nodes it may start cannot take an execution now.
func (e *Engine) stepInput(ctx context.Context, run workflow.Run, now time.Time) (workflow.Input, error) {
	ex, err := e.executions(ctx, run)
	if err != nil {
		return workflow.Input{}, err
	}
	in := workflow.Input{Now: now, Executions: ex}
	if run.Cancel == nil {
		in.Refused = refused(ctx, e.Registry, run)
	}
	return in, nil
}

// refused reads, for the jobs of the run's nodes that a step may start
// (pending ones, and running ones it may retry), why each cannot take an
// execution now (absent: it can).
func refused(ctx context.Context, reg *registry.Registry, run workflow.Run) map[string]string {
	var out map[string]string
	seen := map[string]bool{}
	for _, n := range run.Nodes {
		if seen[n.Job] || (n.State != workflow.NodePending && n.State != workflow.NodeRunning) {
			continue
		}
		seen[n.Job] = true
		if err := canStart(ctx, reg, n.Job); err != nil {
			if out == nil {
				out = map[string]string{}
			}
			out[n.Job] = err.Error()
		}
	}
	return out
}

// canStart says why a node's job cannot take an execution now: the one
// rule (registry.CanRun), a TRANSIENT job, room in its queue.
func canStart(ctx context.Context, reg *registry.Registry, name string) error {
	j, why, err := reg.Config().CanRun(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("job '%s' could not be read: %v", name, err)
	case why == jobs.JobMissing:
		return fmt.Errorf("job '%s' no longer exists", name)
	case j.JobExecutionType != jobs.Transient:
		return fmt.Errorf("job '%s' is a DAEMON job now", name)
	case why != jobs.Runnable:
		return errors.New(why.Why(name, j.AppName))
	}
	if rd, ok, err := reg.Work().ReadyOf(ctx, name); err == nil && ok && queue.Full(rd, reg.MaxPending()) {
		return fmt.Errorf("job '%s' already has %d pending executions (job_state_queue_size)", name, rd.Count)
	}
	return nil
}
