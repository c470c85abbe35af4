package backfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// snapshot is the queues and running work one pass reads once.
type snapshot struct {
	pending  map[string]bool // run keys queued, running or waiting for failover
	busyJobs map[string]bool // jobs with live work, or a backfill run waiting
	running  map[string]map[int]task.Entry
	cfgs     map[string]*jobs.Config      // by job key, nil: unreadable
	guar     map[string]*namespace.Record // by namespace
	owners   map[string]*Backfill         // other backfills read this pass, nil: forgotten
}

// state reads the ready queue, then the running tasks, then the failover
// queue (a run moving between them is seen in one; one missed in a race
// is only Unseen for a pass).
func (l *Loop) state(ctx context.Context) (*snapshot, error) {
	st := &snapshot{pending: map[string]bool{}, busyJobs: map[string]bool{},
		cfgs: map[string]*jobs.Config{}, guar: map[string]*namespace.Record{}, owners: map[string]*Backfill{}}
	ready, err := l.Registry.Work().ReadyQueue(ctx)
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
	running, err := l.Registry.Work().RunningTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("backfill: read the running tasks: %w", err)
	}
	st.running = running
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
	fo, err := l.Registry.Work().FailoverQueue(ctx)
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
	rec, err := reg.Work().RunRecordOf(ctx, key)
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

// failedBy reports whether backfill owner's run at instant at failed or
// was lost, so another backfill may queue that instant again. An owner
// forgotten meanwhile holds no instant (its marks go with it).
func (st *snapshot) failedBy(ctx context.Context, reg *registry.Registry, owner string, at time.Time) (bool, error) {
	b, ok := st.owners[owner]
	if !ok {
		got, err := Get(ctx, reg, owner)
		switch {
		case err == nil:
			b = &got
		case !errors.Is(err, registry.ErrBackfillNotFound):
			return false, err
		}
		st.owners[owner] = b
	}
	return b == nil || b.HasFailed(at), nil
}

// param is the job's jobParameter, handed to its backfill runs.
func (st *snapshot) param(ctx context.Context, reg *registry.Registry, job string) string {
	if c := st.job(ctx, reg, job); c != nil {
		return c.JobParameter
	}
	return ""
}

// job reads a job's config once a pass (nil: unreadable).
func (st *snapshot) job(ctx context.Context, reg *registry.Registry, key string) *jobs.Config {
	if c, ok := st.cfgs[key]; ok {
		return c
	}
	var out *jobs.Config
	if c, err := reg.Config().Job(ctx, key); err == nil {
		out = &c
	}
	st.cfgs[key] = out
	return out
}

// spare reports whether one more run of job fits within its namespace's
// guarantee beside what the namespace runs (its shards' CPUs and
// memory): a backfill never borrows, so it never holds capacity another
// namespace is guaranteed. A namespace without a guarantee shares the
// unguaranteed rest, as its live work does: true.
func (st *snapshot) spare(ctx context.Context, reg *registry.Registry, key string) (bool, error) {
	cfg := st.job(ctx, reg, key)
	if cfg == nil {
		return st.fits(ctx, reg, namespace.Of(key), 0, 0, false)
	}
	return st.fits(ctx, reg, namespace.Of(key), cfg.CPUCount*float64(cfg.ShardingTotalCount), cfg.MemoryMB*float64(cfg.ShardingTotalCount), true)
}

// spareForWorkflow is spare for a workflow's next backfill run: its first
// wave (the nodes that depend on none, which begin together) must fit.
func (st *snapshot) spareForWorkflow(ctx context.Context, reg *registry.Registry, key string, cfg workflow.Config) (bool, error) {
	ns := namespace.Of(key)
	var cpu, mem float64
	known := true
	for _, n := range cfg.Nodes {
		if len(n.DependsOn) > 0 {
			continue
		}
		job := n.Job
		if !strings.Contains(job, namespace.Sep) {
			job = namespace.Key(ns, job)
		}
		c := st.job(ctx, reg, job)
		if c == nil {
			known = false
			continue
		}
		cpu += c.CPUCount * float64(c.ShardingTotalCount)
		mem += c.MemoryMB * float64(c.ShardingTotalCount)
	}
	return st.fits(ctx, reg, ns, cpu, mem, known)
}

// fits reports whether cpu and mem more fit within namespace ns's
// guarantee beside what it runs; known false (the demand could not be
// read) fits only a namespace without a guarantee.
func (st *snapshot) fits(ctx context.Context, reg *registry.Registry, ns string, cpu, mem float64, known bool) (bool, error) {
	rec, ok := st.guar[ns]
	if !ok {
		r, err := reg.Tenancy().Namespace(ctx, ns)
		switch {
		case err == nil:
			rec = &r
		case errors.Is(err, registry.ErrNamespaceNotFound):
		default:
			return false, err
		}
		st.guar[ns] = rec
	}
	if rec == nil || rec.Guarantee == nil {
		return true, nil
	}
	if !known {
		return false, nil
	}
	for job, shards := range st.running {
		if namespace.Of(job) != ns {
			continue
		}
		if c := st.job(ctx, reg, job); c != nil {
			cpu += c.CPUCount * float64(len(shards))
			mem += c.MemoryMB * float64(len(shards))
		}
	}
	return cpu <= rec.Guarantee.CPUCount+1e-9 && mem <= rec.Guarantee.MemoryMB+1e-9, nil
}
