package flowengine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// sweep finds node executions that can no longer end: queued or running
// nowhere (the ready entry, running tasks, shards waiting for a retry or
// failover) while their record says they have not ended: the job was
// updated, disabled or deleted while they waited. One sighting makes a
// suspect; a second, a sweep later, makes it lost (each move between the
// queues is one commit, but the queues are read one after the other, so a
// single sighting may be a move seen half-way). Cancelling runs are
// looked at again (kills that raced a launch are repeated).
func (e *Engine) sweep(ctx context.Context, now time.Time) error {
	for id, at := range e.killed {
		if now.Sub(at) > time.Minute {
			delete(e.killed, id)
		}
	}
	if len(e.owners) == 0 {
		clear(e.suspects)
		return nil
	}
	where, err := readKeySets(ctx, e.Registry)
	if err != nil {
		e.Log.Warn("workflow engine: sweep: read queues", "err", err)
		return nil
	}
	seen := map[string]bool{}
	for key, ref := range e.owners {
		seen[key] = true
		if e.active[ref.wf][ref.id].cancelling {
			e.dirty[ref] = true
		}
		if where.pending[key] || where.active[key] {
			delete(e.suspects, key)
			continue
		}
		rec, err := e.Registry.Work().RunRecordOf(ctx, key)
		if err == nil && rec.Done {
			e.dirty[ref] = true // its end was missed
			continue
		}
		first, suspect := e.suspects[key]
		if !suspect {
			e.suspects[key] = now
			continue
		}
		if now.Sub(first) >= e.Options.Sweep/2 {
			e.lost[key] = "its execution was dropped from the job's queue before it ended (the job was updated, disabled or deleted)"
			e.dirty[ref] = true
		}
	}
	for key := range e.suspects {
		if !seen[key] {
			delete(e.suspects, key)
		}
	}
	return nil
}

// retain keeps the registry small: finished runs beyond KeptRuns per
// workflow (oldest first), every run of a deleted workflow once none is
// active, trigger idempotency keys older than KeyLifetime, and node
// execution records no active run owns any more.
func (e *Engine) retain(ctx context.Context, now time.Time) error {
	names, err := e.Registry.Flows().WorkflowRunNames(ctx)
	if err != nil {
		e.Log.Warn("workflow engine: retention: list runs", "err", err)
		return nil
	}
	ch := e.Registry.Change()
	for _, name := range names {
		if err := e.retainRuns(ctx, ch, name); err != nil {
			e.Log.Warn("workflow engine: retention", "workflow", name, "err", err)
		}
	}
	if err := e.staleKeys(ctx, ch, now); err != nil {
		e.Log.Warn("workflow engine: retention: keys", "err", err)
	}
	if err := e.orphanRecords(ctx, ch); err != nil {
		e.Log.Warn("workflow engine: retention: node records", "err", err)
	}
	for _, part := range ch.Parts(200) {
		err := part.Commit(ctx)
		if errors.Is(err, registry.ErrFenced) {
			return fmt.Errorf("workflow engine: %w", err)
		}
		if err != nil && !isRace(err) {
			e.Log.Warn("workflow engine: retention: delete", "err", err)
		}
	}
	return nil
}

// retainRuns adds to ch the deletions of a workflow's runs past
// retention.
func (e *Engine) retainRuns(ctx context.Context, ch *registry.Change, name string) error {
	runs, err := e.Registry.Flows().WorkflowRuns(ctx, name)
	if err != nil {
		return err
	}
	var finished []workflow.Run
	active := 0
	for _, r := range runs {
		if r.State.Final() {
			finished = append(finished, r)
		} else {
			active++
		}
	}
	if _, exists := e.defs[name]; !exists && active == 0 {
		if _, err := e.Registry.Flows().Workflow(ctx, name); errors.Is(err, workflow.ErrNotFound) {
			ch.DropWorkflowRuns(name)
			return nil
		}
	}
	if len(finished) <= e.Options.KeptRuns {
		return nil
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].EndedAt.Before(finished[j].EndedAt) })
	for _, r := range finished[:len(finished)-e.Options.KeptRuns] {
		ch.DropWorkflowRun(name, r.ID, r.Version)
	}
	return nil
}

// staleKeys adds to ch the deletions of trigger idempotency keys past
// their lifetime.
func (e *Engine) staleKeys(ctx context.Context, ch *registry.Change, now time.Time) error {
	wfs, err := e.Registry.Flows().WorkflowKeyDirs(ctx)
	if err != nil {
		return err
	}
	for _, wf := range wfs {
		keys, err := e.Registry.Flows().WorkflowKeysOf(ctx, wf)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.Unreadable || now.Sub(k.At) > e.Options.KeyLifetime {
				ch.DropWorkflowKey(wf, k.Key, k.Version)
			}
		}
		if len(keys) == 0 {
			ch.DropWorkflowKey(wf, "", 0)
		}
	}
	return nil
}

// orphanRecords adds to ch the deletions of workflow node records whose
// run no longer runs that node (the run was deleted, or ended and copied
// it without the deletion reaching the store).
func (e *Engine) orphanRecords(ctx context.Context, ch *registry.Change) error {
	recs, err := e.Registry.Flows().WorkflowRecords(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if _, owned := e.owners[r.Key]; owned {
			continue
		}
		wf, rest, _ := strings.Cut(r.Workflow, "/")
		id, _, _ := strings.Cut(rest, "/")
		if e.active[wf][id] != nil {
			continue // an active run being loaded or decided
		}
		ch.DropStoredRecord(r)
	}
	return nil
}
