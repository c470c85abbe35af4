package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/txn"
	"github.com/ejcloud/elasticjob/task"
)

// Change is a set of the leader's state changes, committed together (one
// store transaction, behind the registry's fence): what the scheduler
// means to do, named, instead of raw store operations. Build it with the
// methods, then Commit. A Change conditional on what was read (an entry's
// version) fails as a whole with ErrConflict when the state moved on
// meanwhile, so it can be read again and retried.
type Change struct {
	r   *Registry
	ops []store.Op
}

// Change starts an empty change.
func (r *Registry) Change() *Change { return &Change{r: r} }

// Len is how many writes the change holds.
func (c *Change) Len() int { return len(c.ops) }

// Launch records a launched task as the shard's running entry.
func (c *Change) Launch(job string, item int, e task.Entry) *Change {
	c.ops = append(c.ops, putRunningOp(job, item, e))
	return c
}

// Mark rewrites a running entry (a new state, busy or idle), conditional
// on the version it was read at.
func (c *Change) Mark(job string, item int, e task.Entry) *Change {
	c.ops = append(c.ops, setJSON(runningPathOf(job, item), e, e.Version))
	return c
}

// End removes a task's running entry, conditional on its version. Write it
// last: a reader following the commit in order finds the run's record,
// retry or requeue before the shard is gone.
func (c *Change) End(job string, item int, version int64) *Change {
	c.ops = append(c.ops, store.Delete(runningPathOf(job, item), version))
	return c
}

// Unlaunch removes a running entry whatever its version (a launch rolled
// back, or an entry of a launch that never completed).
func (c *Change) Unlaunch(job string, item int) *Change {
	c.ops = append(c.ops, store.Delete(runningPathOf(job, item), store.AnyVersion))
	return c
}

// Dequeue takes the oldest execution of a ready entry, conditional on the
// version it was read at (a trigger meanwhile is never lost).
func (c *Change) Dequeue(rd queue.Ready, now time.Time) *Change {
	c.ops = append(c.ops, dequeueOps(rd, now)...)
	return c
}

// FailOver queues a shard to run again.
func (c *Change) FailOver(job string, item int, f queue.Failover) *Change {
	c.ops = append(c.ops, putFailoverOp(job, item, f))
	return c
}

// TakeFailover removes a failover entry that launches, conditional on the
// version it was read at.
func (c *Change) TakeFailover(f queue.Failover) *Change {
	c.ops = append(c.ops, store.Delete(failoverPathOf(f.Job, f.Item), f.Version))
	return c
}

// DropFailover removes a failover entry whatever its version (a shard the
// job no longer has), or every failover entry of the job (item < 0).
func (c *Change) DropFailover(job string, item int) *Change {
	p := failoverPath + "/" + job
	if item >= 0 {
		p = failoverPathOf(job, item)
	}
	c.ops = append(c.ops, store.Delete(p, store.AnyVersion))
	return c
}

// DropReady removes a job's pending executions.
func (c *Change) DropReady(job string) *Change {
	c.ops = append(c.ops, readyDeleteOps(job)...)
	return c
}

// RecordRun writes a keyed run's record.
func (c *Change) RecordRun(key string, rec task.RunRecord) *Change {
	c.ops = append(c.ops, putRunRecordOp(key, rec))
	return c
}

// CountRun writes a job's run state.
func (c *Change) CountRun(job string, rs task.RunState) *Change {
	c.ops = append(c.ops, putRunStateOp(job, rs))
	return c
}

// Pause disables a job, recording why (pauseAfterFailures).
func (c *Change) Pause(job string, p task.Pause) *Change {
	c.ops = append(c.ops, pauseOp(job, p))
	return c
}

// MarkGang records that a launch recorded over several commits is
// complete: its entries (task.Entry.Gang) count from this commit on.
func (c *Change) MarkGang(job, gang string) *Change {
	c.ops = append(c.ops, store.Put(gangPath+"/"+job, []byte(gang)))
	return c
}

// Wait records why a queue entry waits; Unwait forgets it.
func (c *Change) Wait(key string, w queue.Wait) *Change {
	c.ops = append(c.ops, putWaitingOp(key, w))
	return c
}

// Unwait forgets why a queue entry waited.
func (c *Change) Unwait(key string) *Change {
	c.ops = append(c.ops, deleteWaitingOp(key))
	return c
}

// Commit applies the change. ErrConflict (wrapping the store's error)
// means an entry it was conditional on changed or went meanwhile.
func (c *Change) Commit(ctx context.Context) error {
	if len(c.ops) == 0 {
		return nil
	}
	err := c.r.commit(ctx, c.ops...)
	if err != nil && !errors.Is(err, ErrFenced) && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists)) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// CommitChanges commits changes as a chain (store.CommitChain over
// chainPath, each behind the fence): in order, each atomically, each only
// if every one before it was applied; on ZooKeeper sent back to back. It
// returns how many were applied; the error is the first failed one's,
// ErrConflict as for Change.Commit.
func (r *Registry) CommitChanges(ctx context.Context, changes []*Change) (int, error) {
	parts := make([][]store.Op, len(changes))
	for i, c := range changes {
		if r.fence != nil && len(c.ops) > 0 {
			parts[i] = append(r.fence(), c.ops...)
		} else {
			parts[i] = c.ops
		}
	}
	applied, _, err := store.CommitChain(ctx, r.kv, nil, chainPath, parts)
	if r.fence != nil {
		if ferr := fenceFell(ctx, r.kv, r.fence(), err); ferr != nil {
			return applied, ferr
		}
	}
	if err != nil && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists)) {
		return applied, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return applied, err
}

// gangPath holds, per job, the name of its last launch recorded over
// several commits (/state/gang/{jobName}).
const gangPath = "/state/gang"

// Batch returns a registry whose writes are staged (reads see them) and
// flush, which commits them all as one: a batch of status updates, each
// handled as if alone and committed together. Nothing is written when
// flush fails.
func (r *Registry) Batch() (batch *Registry, flush func(context.Context) error) {
	tx := txn.New(r.kv)
	tx.Trust(r.FencePaths()...)
	return r.with(tx), tx.Flush
}

// chainPath is the node the leader's chained batches link their parts
// through (store.Chainer: a version bump per part); nothing else is kept
// there. It is outside the mirrored /config and /state.
const chainPath = "/ha/commit_chain"

// ChainedBatch is Batch in parts: cut ends a part, and flush commits the
// parts as a chain (store.CommitChain: in order, each atomically, each
// only if every part before it was applied; on ZooKeeper the parts' multis
// are sent back to back, about one round trip for all of them) and says
// how many were applied, the empty parts included. Nothing of a part after
// a failed one is written.
func (r *Registry) ChainedBatch() (batch *Registry, cut func(), flush func(context.Context) (int, error)) {
	tx := txn.New(r.kv)
	tx.Trust(r.FencePaths()...)
	return r.with(tx), tx.Cut, func(ctx context.Context) (int, error) { return tx.FlushChain(ctx, chainPath) }
}

// fenceFell is ErrFenced when err, a commit's failure, is its fence's: an
// election node gone, or (a fence naming a version: an etcd term's)
// written by a later term of the same node. nil otherwise.
func fenceFell(ctx context.Context, kv store.KV, fence []store.Op, err error) error {
	notFound := errors.Is(err, store.ErrNotFound)
	if err == nil || !(notFound || errors.Is(err, store.ErrConflict)) {
		return nil
	}
	for _, f := range fence {
		if !notFound && f.Version == store.AnyVersion {
			continue // a conflict, of another node: an unversioned fence fails as ErrNotFound
		}
		n, gerr := kv.Get(ctx, f.Path)
		if errors.Is(gerr, store.ErrNotFound) || (gerr == nil && f.Version != store.AnyVersion && n.Version != f.Version) {
			return fmt.Errorf("%w: the leadership this write was made under has ended (%s)", ErrFenced, f.Path)
		}
	}
	return nil
}
