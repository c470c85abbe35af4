package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// Backfills (package backfill) live under backfillPath: a record per
// backfill (records/{id}, rewritten by the leader's loop, compare and
// set), its instants (instants/{id}, written once), and a node per job
// instant any backfill enqueued (done/{job}/{unix}, holding the
// backfill's id), created in the same commit as the run it queues, so the
// same instant is never queued twice, by one backfill or two, by one
// leader or the next.
const (
	backfillPath         = "/state/backfill"
	backfillRecordsPath  = backfillPath + "/records"
	backfillInstantsPath = backfillPath + "/instants"
	backfillDonePath     = backfillPath + "/done"
)

// ErrBackfillNotFound is returned for a backfill id no record has.
var ErrBackfillNotFound = errors.New("backfill not found")

// ByBackfill is the origin of a backfill's runs (queue.Origin): "backfill:{id}".
const ByBackfill = "backfill"

// BackfillRunKey is the idempotency key of backfill id's run at instant
// at, for a job of namespace ns, as the scheduler's view names it:
// "{id}.{unix seconds}" qualified with the namespace (namespace.Key), so
// its run record lives in the job's namespace.
func BackfillRunKey(ns, id string, at time.Time) string {
	return namespace.Key(ns, id+"."+strconv.FormatInt(at.Unix(), 10))
}

// IsBackfillRunKey reports whether a run key (qualified or not) is a
// backfill run's.
func IsBackfillRunKey(key string) bool {
	_, name := namespace.Split(key)
	return strings.HasPrefix(name, "bf-")
}

// BackfillInstant is the instant a backfill run's key stands for (ok
// false: not a backfill run's key). A failover retry of a backfill run
// carries only the key: this gives it its instant again.
func BackfillInstant(key string) (time.Time, bool) {
	_, name := namespace.Split(key)
	if !strings.HasPrefix(name, "bf-") {
		return time.Time{}, false
	}
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return time.Time{}, false
	}
	u, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(u, 0).UTC(), true
}

// CreateBackfill writes a new backfill's record and instants.
func (sc Schedule) CreateBackfill(ctx context.Context, id string, record, instants []byte) error {
	err := sc.r.commit(ctx, store.Create(backfillRecordsPath+"/"+id, record), store.Create(backfillInstantsPath+"/"+id, instants))
	if err != nil {
		return fmt.Errorf("registry: create backfill %s: %w", id, err)
	}
	return nil
}

// Backfills lists the backfills' records undecoded (with their versions:
// package backfill decodes them).
func (sc Schedule) Backfills(ctx context.Context) ([]Stored, error) {
	nodes, err := sc.r.kv.List(ctx, backfillRecordsPath)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return storedAll(sc.r, nodes), err
}

// Backfill reads one backfill's record undecoded.
func (sc Schedule) Backfill(ctx context.Context, id string) (Stored, error) {
	n, err := sc.r.kv.Get(ctx, backfillRecordsPath+"/"+id)
	if errors.Is(err, store.ErrNotFound) {
		return stored(sc.r, n), fmt.Errorf("%w: no backfill '%s'", ErrBackfillNotFound, id)
	}
	return stored(sc.r, n), err
}

// BackfillInstants reads one backfill's instants as written.
func (sc Schedule) BackfillInstants(ctx context.Context, id string) ([]byte, error) {
	n, err := sc.r.kv.Get(ctx, backfillInstantsPath+"/"+id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no instants of backfill '%s'", ErrBackfillNotFound, id)
	}
	return n.Value, err
}

// SetBackfill rewrites a backfill's record if it is still at version
// (store.ErrConflict otherwise). The write is fenced: a deposed leader
// writes nothing.
func (sc Schedule) SetBackfill(ctx context.Context, id string, record []byte, version int64) error {
	return sc.r.commit(ctx, store.Set(backfillRecordsPath+"/"+id, record, version))
}

// BackfillRun is one run a backfill queues: job's instant (its nominal
// instant, seconds), keyed Key (an idempotency key: its run record says
// how it ended).
type BackfillRun struct {
	ID      string // the backfill's
	Job     string // scheduler-wide key
	Instant time.Time
	Key     string
	Param   string // the job's jobParameter
	// Redo reports whether an instant backfill owner recorded may be
	// queued again (its run failed or was lost): nil, never. Only a
	// succeeded (or still live) instant is done, so backfilling a range
	// again re-runs what failed in it.
	Redo func(ctx context.Context, owner string) (bool, error)
}

// EnqueueBackfillRun queues one backfill run, recording its job instant
// in the same fenced commit. When some backfill queued that instant
// already it queues nothing and returns that backfill's id.
func (sc Schedule) EnqueueBackfillRun(ctx context.Context, run BackfillRun, now time.Time) (owner string, err error) {
	done := backfillDonePath + "/" + run.Job + "/" + strconv.FormatInt(run.Instant.Unix(), 10)
	pr := queue.PendingRun{JobParameter: run.Param, IdempotencyKey: run.Key, At: now.UTC(), By: ByBackfill + ":" + run.ID, ScheduledAt: run.Instant.UTC()}
	for range maxCASRetries {
		mark := store.Create(done, []byte(run.ID))
		if n, err := sc.r.kv.Get(ctx, done); err == nil {
			owner := string(n.Value)
			if owner == run.ID || run.Redo == nil {
				return owner, nil
			}
			if redo, err := run.Redo(ctx, owner); err != nil || !redo {
				return owner, err
			}
			mark = store.Set(done, []byte(run.ID), n.Version)
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		entry, changed, err := sc.r.triggerOp(ctx, run.Job, queue.Trigger{Run: &pr, At: now})
		if err != nil {
			return "", err
		}
		if !changed {
			return "", fmt.Errorf("%w: job '%s' already has %d pending executions", ErrQueueFull, run.Job, sc.r.maxPending)
		}
		err = sc.r.commit(ctx, append([]store.Op{mark,
			createJSON(TriggerKeysPath+"/"+run.Key, task.RunRecord{JobName: run.Job, At: pr.At})}, entry...)...)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("registry: queue backfill %s's run of %s at %s: %w", run.ID, run.Job, run.Instant.UTC().Format(time.RFC3339), err)
		}
		return run.ID, nil
	}
	return "", fmt.Errorf("registry: queue backfill run of %s: %w after %d tries", run.Job, ErrConflict, maxCASRetries)
}

// backfillWorkflowDonePath holds a node per workflow instant any backfill
// queued (done-workflow/{workflow}/{unix}, holding the backfill's id).
const backfillWorkflowDonePath = backfillPath + "/done-workflow"

// BackfillWorkflowRunID is the id of a backfill's workflow run at instant
// at: one per instant, so the run is found again by it.
func BackfillWorkflowRunID(at time.Time) string {
	return at.UTC().Format("20060102T150405.000Z") + "-backfill"
}

// EnqueueBackfillWorkflowRun creates one backfill's workflow run (QUEUED,
// Source BACKFILL), recording the workflow's instant in the same fenced
// commit, conditional on the workflow's definition as read. When some
// backfill queued that instant already it creates nothing and returns
// that backfill's id.
func (sc Schedule) EnqueueBackfillWorkflowRun(ctx context.Context, run workflow.Run) (owner string, err error) {
	done := backfillWorkflowDonePath + "/" + run.Workflow + "/" + strconv.FormatInt(run.ScheduledAt.Unix(), 10)
	for range maxCASRetries {
		if n, err := sc.r.kv.Get(ctx, done); err == nil {
			return string(n.Value), nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		wf, err := sc.r.kv.Get(ctx, workflowPath(run.Workflow))
		if errors.Is(err, store.ErrNotFound) {
			return "", workflowNotFound(run.Workflow)
		}
		if err != nil {
			return "", err
		}
		err = sc.r.commit(ctx, store.Create(done, []byte(run.Backfill)), store.Check(wf.Path, wf.Version), createWorkflowRunOp(run))
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("registry: queue backfill %s's run of workflow %s at %s: %w", run.Backfill, run.Workflow, run.ScheduledAt.UTC().Format(time.RFC3339), err)
		}
		return run.Backfill, nil
	}
	return "", fmt.Errorf("registry: queue backfill run of workflow %s: %w after %d tries", run.Workflow, ErrConflict, maxCASRetries)
}

// pruneBatch bounds the deletions of one commit when a backfill is
// forgotten.
const pruneBatch = 256

// ForgetBackfill deletes an ended backfill: the instants nodes it
// recorded (those still holding its id), its instants and, last and
// only if still at version, its record, so a pass cut short is finished
// by the next one. key is the job's or workflow's scheduler-wide key;
// workflow says which. Afterwards a new backfill may queue those
// instants again.
func (sc Schedule) ForgetBackfill(ctx context.Context, id, key string, workflow bool, version int64) error {
	dir := backfillDonePath + "/" + key
	if workflow {
		dir = backfillWorkflowDonePath + "/" + key
	}
	nodes, err := sc.r.kv.List(ctx, dir)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("registry: forget backfill %s: %w", id, err)
	}
	var ops []store.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := sc.r.commit(ctx, ops...)
		ops = ops[:0]
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			return nil // changed meanwhile: the next pass sees it again
		}
		return err
	}
	for _, n := range nodes {
		if string(n.Value) != id {
			continue
		}
		if ops = append(ops, store.Delete(n.Path, n.Version)); len(ops) == pruneBatch {
			if err := flush(); err != nil {
				return fmt.Errorf("registry: forget backfill %s: %w", id, err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("registry: forget backfill %s: %w", id, err)
	}
	ops = append(ops, store.Delete(backfillRecordsPath+"/"+id, version))
	if _, err := sc.r.kv.Get(ctx, backfillInstantsPath+"/"+id); err == nil {
		ops = append(ops, store.Delete(backfillInstantsPath+"/"+id, store.AnyVersion))
	}
	if err := sc.r.commit(ctx, ops...); err != nil {
		return fmt.Errorf("registry: forget backfill %s: %w", id, err)
	}
	return nil
}
