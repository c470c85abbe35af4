package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// NodeStart is one workflow node's execution to queue in its job's ready
// entry: a keyed run (see TriggerRun) whose record names its owner and
// holds its inputs.
type NodeStart struct {
	Key       string
	Owner     string // {workflow}/{runId}/{node}
	Parameter string
	Inputs    jobs.Inputs
	// ScheduledAt is the nominal instant of a backfill's workflow run
	// (zero for any other run): the execution's ScheduledAt.
	ScheduledAt time.Time
}

// queueNodeOps returns the ops that queue starts as pending executions of
// job: a Create of each run's record (a key that exists makes the commit
// fail: nothing is queued twice) and the job's ready entry with the runs
// appended, conditional on the entry's version. The caller commits them
// with its own writes.
func (r *Registry) queueNodeOps(ctx context.Context, job string, starts []NodeStart, now time.Time) ([]store.Op, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	now = now.UTC()
	ops := make([]store.Op, 0, len(starts)+1)
	runs := make([]queue.PendingRun, 0, len(starts))
	for _, s := range starts {
		ops = append(ops, createJSON(TriggerKeysPath+"/"+s.Key, task.RunRecord{JobName: job, At: now, Workflow: s.Owner, Inputs: s.Inputs}))
		runs = append(runs, queue.PendingRun{JobParameter: s.Parameter, IdempotencyKey: s.Key, At: now, By: "workflow:" + s.Owner, ScheduledAt: s.ScheduledAt.UTC()})
	}
	p := ReadyPath + "/" + job
	n, err := r.kv.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		gen, genOp, err := newGen(ctx, r.kv, job)
		if err != nil {
			return nil, err
		}
		return append(ops, genOp, createJSON(p, queue.Ready{Count: len(runs), Since: now, Runs: runs, Gen: gen})), nil
	}
	if err != nil {
		return nil, err
	}
	rd, err := decodeReady(n)
	if err != nil {
		return nil, err
	}
	if r.maxPending > 0 && rd.Count+len(runs) > r.maxPending {
		return nil, fmt.Errorf("%w: job '%s' already has %d pending executions (job_state_queue_size %d)", ErrQueueFull, job, rd.Count, r.maxPending)
	}
	rd.Count += len(runs)
	rd.Runs = append(rd.Runs, runs...)
	genOp, err := keepGen(ctx, r.kv, &rd)
	if err != nil {
		return nil, err
	}
	return append(ops, genOp, setJSON(p, rd, n.Version)), nil
}

// dropPendingRunOps returns the ops that remove the pending execution
// queued under key from job's ready entry (conditional on its version and
// generation), or ok false when the entry does not hold it.
func (r *Registry) dropPendingRunOps(ctx context.Context, job, key string) ([]store.Op, bool, error) {
	p := ReadyPath + "/" + job
	n, err := r.kv.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rd, err := decodeReady(n)
	if err != nil {
		return nil, false, err
	}
	for i, run := range rd.Runs {
		if run.IdempotencyKey != key {
			continue
		}
		if rd.Count <= 1 {
			return []store.Op{store.Delete(p, n.Version), endGen(rd)}, true, nil
		}
		rd.Runs = append(rd.Runs[:i:i], rd.Runs[i+1:]...)
		rd.Count--
		rd.Misfired = min(rd.Misfired, rd.Count-1)
		genOp, err := keepGen(ctx, r.kv, &rd)
		if err != nil {
			return nil, false, err
		}
		return []store.Op{genOp, setJSON(p, rd, n.Version)}, true, nil
	}
	return nil, false, nil
}

// PendingKeys returns the idempotency keys of every pending execution.
func (wk Work) PendingKeys(ctx context.Context) (map[string]bool, error) {
	q, err := wk.ReadyQueue(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, rd := range q {
		for _, run := range rd.Runs {
			if run.IdempotencyKey != "" {
				out[run.IdempotencyKey] = true
			}
		}
	}
	return out, nil
}

// ActiveKeys returns the run keys of every running task and of every
// shard waiting for a retry or failover.
func (wk Work) ActiveKeys(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	running, err := wk.RunningTasks(ctx)
	if err != nil {
		return nil, err
	}
	for _, items := range running {
		for _, rt := range items {
			if rt.RunKey != "" {
				out[rt.RunKey] = true
			}
		}
	}
	fo, err := wk.FailoverQueue(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range fo {
		if f.RunKey != "" {
			out[f.RunKey] = true
		}
	}
	return out, nil
}

// deleteRunRecordOp removes a keyed run's record.
func deleteRunRecordOp(key string) store.Op {
	return store.Delete(TriggerKeysPath+"/"+key, store.AnyVersion)
}

// ReadyOf reads one job's ready entry (ok false when it has none).
func (wk Work) ReadyOf(ctx context.Context, job string) (queue.Ready, bool, error) {
	n, err := wk.r.kv.Get(ctx, ReadyPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return queue.Ready{}, false, nil
	}
	if err != nil {
		return queue.Ready{}, false, err
	}
	rd, err := decodeReady(n)
	return rd, err == nil, err
}

// Requeue puts back an execution whose launch was rolled back: run (a
// keyed run, with its key and parameter: its record already exists), first
// in line, or, when nil, a plain execution queued by by serving the cron
// instant nominal (zero: none; queue.Ready.Nominal), first among the plain
// ones. tasks, when not empty, are the ids its shards had in the
// rolled-back launch, which they take back when it launches again
// (queue.Relaunch). misfire is the job's flag: without it a plain
// execution pending already collapses into the one put back (misfire=false
// pending executions collapse into one, docs/jobs.md), which keeps its
// place, its instant and its task ids. since is when the execution put
// back was queued (zero: now): it has waited since then, and stays listed
// so. with (may be nil) is committed in the same transaction: the
// roll-back's own writes, so that no reader finds the execution neither
// queued nor running between two commits.
func (wk Work) Requeue(ctx context.Context, with *Change, job string, run *queue.PendingRun, by string, misfire bool, nominal, since, now time.Time, tasks map[int]string) error {
	p := ReadyPath + "/" + job
	if since.IsZero() || since.After(now) {
		since = now
	}
	for range maxCASRetries {
		off, gateOps, err := gateClosed(ctx, wk.r.kv, job)
		if err != nil {
			return err
		}
		if off {
			// Disabled or deregistered since the launch took the execution:
			// the change would have cleared it, had it still been queued
			// (SetDisabled, DeleteJob), so it is dropped, not run after an
			// enable; the roll-back's own writes commit all the same.
			var ops []store.Op
			if with != nil {
				ops = append(ops, with.ops...)
			}
			err = wk.r.commit(ctx, append(ops, gateOps...)...)
			if !errors.Is(err, store.ErrConflict) {
				return err
			}
			continue
		}
		rd, ok, err := wk.ReadyOf(ctx, job)
		if err != nil {
			return err
		}
		next := requeued(rd, ok, run, by, misfire, nominal, since)
		if len(tasks) > 0 {
			next.Relaunch = queue.RelaunchOf(run, tasks)
		}
		ops := gateOps
		if with != nil {
			ops = append(ops, with.ops...)
		}
		if ok {
			genOp, err := keepGen(ctx, wk.r.kv, &next)
			if err != nil {
				return err
			}
			ops = append(ops, genOp, setJSON(p, next, rd.Version))
		} else {
			gen, genOp, err := newGen(ctx, wk.r.kv, job)
			if err != nil {
				return err
			}
			next.Gen = gen
			ops = append(ops, genOp, createJSON(p, next))
		}
		err = wk.r.commit(ctx, ops...)
		if !(errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound)) {
			return err
		}
	}
	return fmt.Errorf("registry: re-queue %s: %w after %d tries", job, ErrConflict, maxCASRetries)
}

// requeued is the ready entry rd (ok false: none) with the execution of
// Requeue added.
func requeued(rd queue.Ready, ok bool, run *queue.PendingRun, by string, misfire bool, nominal, since time.Time) queue.Ready {
	if !ok {
		rd = queue.Ready{Since: since.UTC()}
	} else if since.Before(rd.Since) { // the execution put back goes first: the entry waits since it was queued
		rd.Since = since.UTC()
	}
	if run != nil {
		rd.Count++
		rd.Runs = append([]queue.PendingRun{*run}, rd.Runs...)
		return rd
	}
	if !misfire && ok && rd.Count-len(rd.Runs) == 1 {
		// A fire queued while the launch was under way (the job's entry
		// was empty then) collapses into the execution put back, which
		// is due now: its own instant, origin and hold go.
		rd.Count--
		rd.Nominal, rd.PlainBy, rd.NotBefore = nil, nil, time.Time{}
	}
	rd = rd.WithFirstPlain(nominal)
	if n := len(rd.PlainBy); n > 0 && rd.PlainBy[0].By == by {
		rd.PlainBy = slices.Clone(rd.PlainBy)
		rd.PlainBy[0].N++
	} else if ok || by != "" {
		rd.PlainBy = append([]queue.Origin{{By: by, N: 1}}, rd.PlainBy...)
	}
	return rd
}
