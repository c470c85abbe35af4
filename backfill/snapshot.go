package backfill

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/registry"
)

// snapshot is the queues and running work one pass reads once.
type snapshot struct {
	pending  map[string]bool // run keys queued, running or waiting for failover
	busyJobs map[string]bool // jobs with live work, or a backfill run waiting
	params   map[string]string
}

// state reads the ready queue, then the running tasks, then the failover
// queue (a run moving between them is seen in one; one missed in a race
// is only Unseen for a pass).
func (l *Loop) state(ctx context.Context) (*snapshot, error) {
	st := &snapshot{pending: map[string]bool{}, busyJobs: map[string]bool{}, params: map[string]string{}}
	ready, err := l.Registry.ReadyQueue(ctx)
	if err != nil {
		return nil, fmt.Errorf("backfill: read the ready queue: %w", err)
	}
	for _, rd := range ready {
		if rd.Count > 0 {
			st.busyJobs[rd.Job] = true
		}
		for _, r := range rd.Runs {
			if r.IdempotencyKey != "" {
				st.pending[r.IdempotencyKey] = true
			}
		}
	}
	running, err := l.Registry.RunningTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("backfill: read the running tasks: %w", err)
	}
	for job, shards := range running {
		for _, e := range shards {
			if e.RunKey != "" {
				st.pending[e.RunKey] = true
			}
			if !IsRunKey(e.RunKey) {
				st.busyJobs[job] = true
			}
		}
	}
	fo, err := l.Registry.FailoverQueue(ctx)
	if err != nil {
		return nil, fmt.Errorf("backfill: read the failover queue: %w", err)
	}
	for _, f := range fo {
		st.busyJobs[f.Job] = true
		if f.RunKey != "" {
			st.pending[f.RunKey] = true
		}
	}
	return st, nil
}

func (st *snapshot) busy(job string) bool { return st.busyJobs[job] }

// outcome is what became of the run keyed key.
func (st *snapshot) outcome(ctx context.Context, reg *registry.Registry, key string) Outcome {
	if st.pending[key] {
		return Pending
	}
	rec, err := reg.RunRecordOf(ctx, key)
	switch {
	case err != nil && !errors.Is(err, registry.ErrRunNotFound):
		return Pending // unknown this pass
	case err != nil:
		return Unseen
	case rec.Done && rec.Success && !rec.Failed:
		return Succeeded
	case rec.Done:
		return FailedRun
	}
	return Unseen
}

// param is the job's jobParameter, handed to its backfill runs.
func (st *snapshot) param(ctx context.Context, reg *registry.Registry, job string) string {
	if p, ok := st.params[job]; ok {
		return p
	}
	cfg, err := reg.Job(ctx, job)
	if err == nil {
		st.params[job] = cfg.JobParameter
	}
	return cfg.JobParameter
}
